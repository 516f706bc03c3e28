"""Celery workers: the translate task, the engines and the GPU-group launcher.

Nothing outside this package imports it; the API enqueues ``workers.tasks.translate_chunk`` by
name. Engines are imported lazily, so importing the task module never pulls torch or vLLM.
"""
