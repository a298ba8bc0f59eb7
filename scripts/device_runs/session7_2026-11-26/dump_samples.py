"""Diagnostic patch applied on the device only (never committed to the engine): verdict.py
writes every evaluation's figures (reference, candidate ms per call, paired by sample) to
$PKB_SAMPLES_DUMP, so scripts/compare_estimators.py can compare estimators on them."""
p = "pkb_ray/engine/verdict.py"
s = open(p).read()
s = s.replace("    ev, ref, cand = timing_evidence.evidence(samples)\n",
              "    ev, ref, cand = timing_evidence.evidence(samples)\n"
              "    import json as _j, os as _o\n"
              "    open(_o.environ['PKB_SAMPLES_DUMP'], 'a').write(_j.dumps({'ref': ref, 'cand': cand}) + '\\n')\n", 1)
open(p, "w").write(s)
