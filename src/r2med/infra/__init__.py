"""Infrastructure with no retrieval knowledge: the r2med home and atomic writes (``home``), containment
(``containment``), retries and deadlines, URL redaction, progress, the registry shape, the LLM client,
loading user code (``user_code``) and checking loaded model weights (``weights``)."""
