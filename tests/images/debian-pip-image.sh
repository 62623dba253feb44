#!/bin/sh
# Builds waza-test/debian-pip:12: Debian 12 with python3-pip (see debian-image.sh). Usage: debian-pip-image.sh [TAG]
exec sh "$(dirname "$0")/debian-image.sh" "${1:-waza-test/debian-pip:12}" python3-pip
