"""How the LLM client runs requests unless told otherwise: requests in flight at once, the request timeout, the
retries per request.

The one declaration of :class:`r2med.infra.llm.LLMClient`'s defaults, apart from the client (which imports the HTTP
client) so that the command line shows them in ``--help`` without loading it (``r2med expand --concurrency``,
``--max-retries``).
"""

from __future__ import annotations

from typing import Final

#: requests in flight at once
CONCURRENCY: Final = 16
#: seconds before a request is given up and retried
TIMEOUT: Final = 120.0
#: retries per request (429/5xx, timeouts, dropped connections)
MAX_RETRIES: Final = 6
