"""`emulator verify`: a conformance suite that probes every Part A endpoint and rule of a CRM.

catalogue   every check: id, spec endpoint, rule
checks      pure verdicts over the CRM's answers (record_checks: companies and contacts)
probes      the marked request bodies
runner      the httpx probing run
report      report, progress lines, summary, JSON, JUnit
html        the self-contained HTML report
"""
