"""ScanGrade, the grader of the CUDA prefix-scan assignment: reading submissions, compiling them,
running the judge, exporting and reporting results, batch grading and the gallery of known verdicts.
The command-line entry points are the scripts beside this package (grading/grade.py, batch.py,
gallery.py, exporters.py, report.py); vocab.py holds the shared names and rules, files.py the file helpers
(atomic write, hashing, capped reads, GPU discovery), results.py the reading of a results.json."""
