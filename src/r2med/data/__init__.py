"""Collections and their loaders: hub, R2MED folder, BEIR folder, TREC qrels; validation with file:line errors."""

from .collection import Collection, Qrels, QrelsCheck
from .files import read_qrels
from .loaders import find_expansion_files, load_demo, load_folder, load_task

__all__ = ["Collection", "Qrels", "QrelsCheck", "find_expansion_files", "load_demo", "load_folder",
           "load_task", "read_qrels"]
