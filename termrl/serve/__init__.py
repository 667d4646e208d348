"""termrl environments served over OpenEnv (``termrl serve``) and the clients that play them.

``termrl.serve.server``: the server (``Served``, ``serve``, ``running``); ``termrl.serve.client``: an
OpenEnv client (``TermrlEnvClient``) and remote episodes for TRL's ``GRPOTrainer``
(``RemoteEnvironmentFactory``); ``termrl.serve.protocol``: the action, observation and state types.
Importing this package loads neither: each needs ``openenv-core`` (``pip install 'termrl[serve]'``).
"""
