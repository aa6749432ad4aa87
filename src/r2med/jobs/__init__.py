"""What each command does over tasks and run folders, below the command line and above the parts.

* :mod:`.folders` -- run folders: finishing a task (scored as written), reusing a finished one,
  reading them back, run folders as systems;
* :mod:`.evaluate` -- ``evaluate`` (retrieve + score + write), ``demo``, ``score``;
* :mod:`.rerank`, :mod:`.fuse` -- run folders in, run folders out;
* :mod:`.expand` -- ``expand``: LLM expansions written in R2MED's layout;
* :mod:`.encode`, :mod:`.ray` -- ``encode`` (in-process or on Ray) and ``evaluate --ray``;
* :mod:`.reproduce` -- the reproduction matrix: plan, run, grade;
* :mod:`.report` -- the inputs of ``report`` / ``compare`` (systems, task texts);
* :mod:`.cache` -- ``cache ls|rm``.

Every job takes its collections from :mod:`r2med.data.resolve` and its facts about retrievers and
rerankers from their registries; it renders nothing (:mod:`r2med.report`, :mod:`r2med.cli` do).
"""
