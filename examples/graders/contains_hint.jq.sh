#!/bin/sh
# Pass when the output contains the hint; jq answers every JSON value on stdin, so this is
# a one-shot grader and a worker (worker:./contains_hint.jq.sh) in one line.
exec jq -c --unbuffered '((.hint // "") | ascii_downcase) as $h
  | if $h == "" then {error: "the prompt has no hint to look for"}
    else ((.output // "") | ascii_downcase | contains($h)) as $f
      | {pass: $f, score: (if $f then 1 else 0 end), reasoning: ("hint " + (if $f then "found" else "missing" end))}
    end'
