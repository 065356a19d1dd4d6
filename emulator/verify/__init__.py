"""`emulator verify`: a conformance suite that probes every Part A endpoint and rule of a CRM.

catalogue   every check: id, spec endpoint, rule
checks      pure verdicts over the CRM's answers (record_checks: companies and contacts)
probes      the marked request bodies
runner      the httpx probing run
report      report, progress lines, summary, JSON, JUnit
html        the self-contained HTML report
deep        `--deep`: the Hypothesis state machine of random call sequences, run in a thread
deep_model  the invariants `--deep` checks after every call (pure)
deep_report the `--deep` result in every output, with the shrunk sequence as curl lines
"""
