"""Results on disk: the folder model (``OUT/<system>/<task>/``: finishing, reusing and finding task
folders, ``folders``) and grading a result against the published R2MED figures (``published``)."""
