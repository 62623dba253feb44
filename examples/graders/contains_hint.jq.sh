#!/bin/sh
# Pass when the output contains the hint. jq answers every line on stdin, so this is a
# one-shot grader and a worker (worker:./contains_hint.jq.sh) at once; each answer echoes
# the request's requestId, as worker mode asks.
exec jq -cR --unbuffered '(try fromjson catch null) as $req
  | (($req.hint // "") | ascii_downcase) as $hint
  | if $req == null then {error: "bad request: not JSON"}
    elif $hint == "" then {error: "the prompt has no hint to look for"}
    else (($req.output // "") | ascii_downcase | contains($hint)) as $found
      | {pass: $found, score: (if $found then 1 else 0 end), reasoning: ("hint " + (if $found then "found" else "missing" end))}
    end
  | . + {requestId: (try $req.requestId catch null)}'
