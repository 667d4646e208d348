"""``ray start`` for a test cluster on one machine, with every server on 127.0.0.1 only.

Ray 2.60 turns ``--node-ip-address=127.0.0.1`` into the machine's outward address (and then
listens on every interface); with ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` it keeps 127.0.0.1
but refuses to start worker nodes. Here the node's address is 127.0.0.1 and nothing else:
Ray then binds its GCS, raylet and agents to loopback. Usage: ``python raynode.py start ...``
(the arguments of ``ray start``).
"""

import sys

from ray._private import services

services.get_node_ip_address = lambda address=None: "127.0.0.1"

from ray.scripts.scripts import main  # after the address is pinned

if __name__ == "__main__":
    sys.argv[0] = "ray"
    sys.exit(main())
