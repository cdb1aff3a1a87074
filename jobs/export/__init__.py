"""The `export` job: hand over a checkpoint and a MindIR that load in a fresh process and agree.

Why: a checkpoint needs the network code to rebuild it; a MindIR carries the graph but
is bound by its input signature (exporting with a [64, 1, 28, 28] example proves nothing about
[1, 1, 28, 28]); load checks run in a new process, because parameters still in memory can hide
a wrong or stale file; load_param_into_net reports what did not load and does not raise for it.

Every load runs in `jobs.export.loader`, started with exec, and is compared with the outputs this
job computed in memory on the reference samples. MindSpore Lite, when it imports in the jobs
interpreter, builds the MindIR on CPU and then on the target, each in its own process.

    python -m jobs.export --job-dir DIR

The modules, in the order the job uses them: state (the run and what it emitted), source (which
weights), pool and reference (the reference set), checkpoint, loaders (the fresh processes),
mindir, lite, summary; job.py runs them; load*.py is the loader program itself.
This package file imports nothing, so a loader process starts without the job's modules.
"""
