"""The project's own demo gold dataset: synthetic, authored here, regenerated deterministically.

``python -m workbench.demo.build data/demo`` (re)writes ``gold.jsonl``, ``rubric.yaml``,
``card.md`` and ``evidence.jsonl`` (see :func:`workbench.demo.build.build`). The content
(policies, questions, response sentences) is package data under ``workbench/demo/content/``,
read and validated by :mod:`workbench.demo._content`; the two demo judges are in
:mod:`workbench.judges.demo`.
"""

from ._serve import serve_scripted

__all__ = ["serve_scripted"]
