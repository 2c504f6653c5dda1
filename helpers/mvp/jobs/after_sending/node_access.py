"""How this host reaches a node's own Ray logs, which outlive the node's
raylet: by node address, the directory of this host that holds the node's
/tmp/ray (local runtime, MVP_NODE_RAY_DIRS) or the ssh argv that enters the
node (ssh runtime, MVP_NODE_SSH). Built once from the settings the bash side
passes (from_settings) and handed to archiving; the other runtimes have
neither. (A NamedTuple, where plan.Plan is a plain class: dataclasses cost
imports on the status path, which bench/status.sh times.)"""
import re
from typing import Mapping, NamedTuple, Optional

from ...worker import kv
from ...worker.errors import MvpError

# MVP_NODE_SSH's key of node I's address; its argv's words are nodeI_argc
# and nodeI_arg_N (kv.words, made by bash's mvp::kv::emit_words).
_NODE_IP = re.compile(r"(node[0-9]+_)ip\Z")


class NodeAccess(NamedTuple):
    """Each node's way in, by its Ray address: ray_dirs (a directory of this
    host) or ssh (an argv, the remote command still to add); a node in
    neither cannot be reached from this host."""
    ray_dirs: Mapping[str, str]
    ssh: Mapping[str, tuple]

    def ray_dir(self, ip: Optional[str]) -> Optional[str]:
        return self.ray_dirs.get(ip)

    def ssh_argv(self, ip: Optional[str]) -> list:
        """The ssh argv into node IP; empty when this runtime has none."""
        return list(self.ssh.get(ip, ()))


# No node reachable from this host (a head that no longer knows the job's nodes).
UNREACHABLE = NodeAccess({}, {})


def ssh_by_ip(text: str) -> dict:
    """MVP_NODE_SSH's key=value lines as {node address: its ssh argv}; ValueError naming what is wrong."""
    found = kv.parse(text)
    ssh = {}
    for key, ip in found.items():
        node = _NODE_IP.match(key)
        if node:
            ssh[ip] = tuple(kv.read_words(found, node.group(1)))
    return ssh


def from_settings(settings) -> NodeAccess:
    """The one reading of MVP_NODE_RAY_DIRS and MVP_NODE_SSH."""
    try:
        ssh = ssh_by_ip(settings.node_ssh)
    except ValueError as exc:
        raise MvpError(f"MVP_NODE_SSH is not the ssh runtime's node list ({exc}); it is set by "
                       "scripts/lib/runtime_ssh.sh (mvp::rt::node_log_ssh), not by hand") from None
    return NodeAccess(settings.node_ray_dirs, ssh)
