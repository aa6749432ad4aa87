"""Collections and their loaders: hub, R2MED folder, BEIR folder, TREC qrels; validation with file:line errors;
which collection a task name or folder means (:mod:`.resolve`)."""

from .collection import Collection, Qrels, QrelsCheck
from .files import read_qrels
from .loaders import find_expansion_files, load_demo, load_folder
from .resolve import RecordedSource, TaskRef, check_hub, load_task, locate, resolve

__all__ = [
    "Collection",
    "Qrels",
    "QrelsCheck",
    "RecordedSource",
    "TaskRef",
    "check_hub",
    "find_expansion_files",
    "load_demo",
    "load_folder",
    "load_task",
    "locate",
    "read_qrels",
    "resolve",
]
