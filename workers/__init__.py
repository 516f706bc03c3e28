"""Celery workers: the translate task, its scheduler, the engines and the GPU-group launcher.

Nothing outside this package imports it; the API enqueues :data:`mtfleet.core.keys.TRANSLATE_TASK`
by name. Engines are imported lazily, so importing the Celery app never pulls torch or vLLM.
"""
