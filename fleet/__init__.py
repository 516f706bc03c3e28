"""The operator's side of mtfleet: the commands that start and administer a fleet (``mtfleet
api``, ``worker``, ``flower``, ``demo``, ``keys``, ``pools forget``, ``dead-letters``), a whole
fleet on one machine (:mod:`~mtfleet.fleet.localfleet`, for the demo, the tests and the
benchmarks) and the GPU planner behind ``mtfleet plan`` (:mod:`~mtfleet.fleet.capacity` on the
step model of :mod:`~mtfleet.fleet.gpucost`).

The SDK and the client commands (``mtfleet.producer``) install without the server stack; what
these commands run needs ``pip install 'mtfleet[server]'`` (``[flower]`` for Flower), and a
command run without it says so (:mod:`mtfleet.producer.extras`).
"""
