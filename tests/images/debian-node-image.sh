#!/bin/sh
# Builds waza-test/debian-node:12: Debian 12 with nodejs and npm (see debian-image.sh). Usage: debian-node-image.sh [TAG]
exec sh "$(dirname "$0")/debian-image.sh" "${1:-waza-test/debian-node:12}" nodejs,npm
