"""``r2med export``: results leave r2med in the formats the field uses (MTEB's results layout).

The systems are read like every command that reads runs (:func:`~r2med.results.folders.find_runs`:
results roots, system or task folders); each system's finished tasks go to the format's writer
(:func:`r2med.export.mteb.export_mteb`, which owns the translation and refuses results made on
another data revision than MTEB's pin unless forced).
"""

from __future__ import annotations

from pathlib import Path

from ..data import locate
from ..data.resolve import require
from ..errors import R2MedError
from ..export.mteb import CollectionCounts, MtebExport, collection_counts, export_mteb, run_depth
from ..infra.containment import check_output_dir
from ..results.folders import find_runs
from ..runs.record import RunRecord, read_record
from ..runs.run import RUN_FILE, read_trec
from ..steps import ExportStep

#: The formats ``r2med export --format`` writes.
EXPORT_FORMATS = ("mteb",)


def export_runs(step: ExportStep) -> list[MtebExport]:
    """Export every system in ``step.runs`` under ``step.out``; one :class:`~r2med.export.mteb.MtebExport` per system.

    ``model``: the model name to file the results under (default: the system's name; one system only);
    ``model_revision``: the model's commit; ``force``: export results whose data revision is not
    MTEB's pin (see :func:`r2med.export.mteb.export_mteb`); ``mteb_task``: the MTEB task a local
    collection is (checked against its counts: the collection is loaded from the source the run recorded).
    """
    runs, out, fmt, model, model_revision = step.runs, step.out, step.format, step.model, step.model_revision
    force, mteb_task, strict = step.force, step.mteb_task, step.strict

    if fmt not in EXPORT_FORMATS:
        raise R2MedError(f"unknown export format {fmt!r}; choose from: {', '.join(EXPORT_FORMATS)}")
    selection = find_runs(runs)
    systems = selection.systems
    if model is not None and len(systems) > 1:
        raise R2MedError(
            f"--model names one model, but there are {len(systems)} systems "
            f"({', '.join(s.folder.name for s in systems)}); export one system at a time"
        )
    check_output_dir(out)
    selection.announce()
    read: list[tuple[str, list[RunRecord], dict[str, int], dict[str, CollectionCounts]]] = []
    for ref in systems:  # every system read (and checked) before anything is written
        folders = ref.task_paths()
        records = [read_record(f) for f in folders]
        depths = {
            str(r.task or f.name): run_depth(read_trec(f / RUN_FILE))
            for r, f in zip(records, folders)
            if (f / RUN_FILE).is_file()
        }
        counts = {}
        if mteb_task is not None:
            for record in records:
                task = str(record.task)
                recorded = record.recorded_source()  # what the data resolver (a layer below the record) reads
                counts[task] = collection_counts(
                    require(locate(task, None, recorded=recorded, hub=False, strict=strict), task, recorded).load()
                )
        read.append((model or ref.folder.name, records, depths, counts))
    return [
        export_mteb(
            records, Path(out), name, model_revision, depths=depths, force=force, mteb_task=mteb_task, counts=counts
        )
        for name, records, depths, counts in read
    ]
