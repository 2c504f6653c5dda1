#!/usr/bin/env bats
# The ssh runtime's configuration without a cluster: the inventory, the
# addresses it implies, the ssh command of each node, token auth's default and
# bad input as one ERROR line. (Real sshd servers: tests/ssh.)

setup() {
  load ../test_helper/common
  unset SHARED_ROOT MVP_HEAD_IP MVP_WORKER_IPS MVP_WORKERS MVP_RAY_AUTH MVP_SSH_CONFIG MVP_SSH_IDENTITY MVP_SSH_KNOWN_HOSTS
  export MVP_CONFIG=$MVP_REPO/tests/fixtures/empty.env MVP_RUNTIME=ssh
  export MVP_SSH_HEAD=admin@10.1.0.10:2200 MVP_SSH_WORKERS="10.1.0.11 ops@10.1.0.12:22 10.1.0.13:2201"
}

# Loads the configuration as every script does and prints what it resolved.
resolve() {
  bash -c 'source "$1/scripts/lib/common.sh"; shift; mvp::flags::parse "$@"; mvp::config::load
    echo "workers=$MVP_WORKERS"; echo "nodes=${MVP_NODES[*]}"; echo "head=$MVP_HEAD_IP"
    echo "worker_ips=$MVP_WORKER_IPS"; echo "shared=$SHARED_ROOT"; echo "auth=$MVP_RAY_AUTH"
    echo "token=$MVP_RAY_TOKEN_FILE"; echo "dashboard=$MVP_DASHBOARD_URL"
    [[ $MVP_RUNTIME != ssh ]] || for i in 0 3; do mvp::rt::ssh_argv "$i"; echo "ssh$i=${MVP_SSH_ARGV[*]}"; done' _ "$MVP_REPO" "$@"
}

@test "ssh inventory: any number of workers, named in order; Ray addresses from IPv4 hosts; token auth on by default" {
  run resolve
  assert_success
  assert_line "workers=3"
  assert_line "nodes=mvp11-ray-head mvp11-ray-worker-0 mvp11-ray-worker-1 mvp11-ray-worker-2"
  assert_line "head=10.1.0.10"
  assert_line "worker_ips=10.1.0.11 10.1.0.12 10.1.0.13"
  assert_line "shared=/private"
  assert_line "auth=token"
  assert_line "token=/private/secrets/ray_auth_token"
  assert_line "dashboard=http://10.1.0.10:8265"
}

@test "ssh inventory: each node's ssh has BatchMode, strict host keys, its user and port, and the optional files" {
  MVP_SSH_KNOWN_HOSTS="/etc/mvp/known hosts" MVP_SSH_IDENTITY=/etc/mvp/id MVP_SSH_CONFIG=/etc/mvp/ssh_config run resolve
  assert_success
  assert_line --partial "ssh0=ssh -o BatchMode=yes -o StrictHostKeyChecking=yes"
  assert_line --regexp '^ssh0=.* -F /etc/mvp/ssh_config -i /etc/mvp/id -o IdentitiesOnly=yes -o UserKnownHostsFile="/etc/mvp/known hosts" -p 2200 admin@10.1.0.10$'
  assert_line --regexp '^ssh3=.* -p 2201 10.1.0.13$'
}

@test "ssh: the helper gets each node's address and ssh command (MVP_NODE_SSH) to read a driver's log from a node whose Ray is gone; the words read back as that node's ssh argv, spaces in a path kept" {
  run env MVP_SSH_KNOWN_HOSTS="/etc/mvp/known hosts" bash -c 'source "$1/scripts/lib/common.sh"; mvp::flags::parse; mvp::config::load
    mvp::rt::ssh_argv 3; printf "%s\n" "${MVP_SSH_ARGV[@]}" >"$2/argv3"; printf "%s" "$MVP_NODE_SSH"' _ "$MVP_REPO" "$BATS_TEST_TMPDIR"
  assert_success
  assert_equal "$(grep -c '^node[0-9]*_ip=' <<<"$output")" 4
  assert_line "node0_ip=10.1.0.10"
  assert_line "node0_arg_0=ssh"
  assert_line "node0_arg_1=-o"
  assert_line "node0_arg_2=BatchMode=yes"
  local last
  last=$(($(sed -n 's/^node0_argc=//p' <<<"$output") - 1))
  assert_line "node0_arg_$((last - 2))=-p"
  assert_line "node0_arg_$((last - 1))=2200"
  assert_line "node0_arg_$last=admin@10.1.0.10"
  assert_line "node3_ip=10.1.0.13"
  PYTHONPATH=$MVP_REPO/helpers "$MVP_REPO/.venv/bin/python" -c 'import sys
from mvp.jobs.after_sending import node_access
print("\n".join(node_access.ssh_by_ip(sys.stdin.read())["10.1.0.13"]))' <<<"$output" >"$BATS_TEST_TMPDIR/parsed3"
  diff "$BATS_TEST_TMPDIR/argv3" "$BATS_TEST_TMPDIR/parsed3"
  grep -qx 'UserKnownHostsFile="/etc/mvp/known hosts"' "$BATS_TEST_TMPDIR/parsed3"
}

@test "ssh: the helper reads an empty MVP_NODE_SSH (every other runtime) as no ssh way in, and refuses one that is not key=value words in one line naming it and what sets it" {
  run env PYTHONPATH="$MVP_REPO/helpers" "$MVP_REPO/.venv/bin/python" -c 'from types import SimpleNamespace
from mvp.jobs.after_sending import node_access
from mvp.worker.errors import MvpError
print(node_access.from_settings(SimpleNamespace(node_ray_dirs={"10.0.0.1": "/d"}, node_ssh="")))
for text in ("10.1.0.13 ssh 10.1.0.13", "node0_ip=10.1.0.13\nnode0_argc=2\nnode0_arg_0=ssh"):
    try:
        node_access.from_settings(SimpleNamespace(node_ray_dirs={}, node_ssh=text))
    except MvpError as exc:
        print(exc)'
  assert_success
  assert_equal "${#lines[@]}" 3
  assert_line --index 0 "NodeAccess(ray_dirs={'10.0.0.1': '/d'}, ssh={})"
  assert_line --index 1 "MVP_NODE_SSH is not the ssh runtime's node list (line 1: '10.1.0.13 ssh 10.1.0.13' is not a key=value line); it is set by scripts/lib/runtime_ssh.sh (mvp::rt::node_log_ssh), not by hand"
  assert_line --index 2 "MVP_NODE_SSH is not the ssh runtime's node list (no word 'node0_arg_1' of node0_argc=2); it is set by scripts/lib/runtime_ssh.sh (mvp::rt::node_log_ssh), not by hand"
}

@test "ssh: the repo and verl checkout under this host's view of the shared storage are the nodes' paths under SHARED_ROOT; outside it they stay as they are" {
  run env MVP_HOST_SHARED_DIR=/mnt/shared/ MVP_VERL_DIR=/mnt/shared/common/verl bash -c 'source "$1/scripts/lib/common.sh"; mvp::flags::parse; mvp::config::load
    echo "repo=$MVP_NODE_REPO"; echo "verl=$MVP_NODE_VERL_DIR"; echo "token=$MVP_RAY_TOKEN_FILE"' _ "$MVP_REPO"
  assert_success
  assert_line "repo=$MVP_REPO"
  assert_line "verl=/private/common/verl"
  assert_line "token=/private/secrets/ray_auth_token"
}

@test "ssh: MVP_SSH_KNOWN_HOSTS left empty is the contract's default, ssh's own ~/.ssh/known_hosts: given to ssh as no option, named in a refused host key's message" {
  mkdir -p "$BATS_TEST_TMPDIR/bin"
  printf '#!/bin/sh\necho "Host key verification failed." >&2\nexit 255\n' >"$BATS_TEST_TMPDIR/bin/ssh"
  chmod +x "$BATS_TEST_TMPDIR/bin/ssh"
  run env PATH="$BATS_TEST_TMPDIR/bin:$PATH" HOME=/home/ops bash -c 'source "$1/scripts/lib/common.sh"; mvp::flags::parse; mvp::config::load
    echo "known=$MVP_SSH_KNOWN_HOSTS"; mvp::rt::ssh_argv 1; echo "ssh1=${MVP_SSH_ARGV[*]}"; mvp::rt::reach 1' _ "$MVP_REPO"
  assert_failure
  assert_line "known=/home/ops/.ssh/known_hosts"
  refute_line --partial "UserKnownHostsFile"
  assert_line "mvp11-ray-worker-0 (10.1.0.11): its host key is not in /home/ops/.ssh/known_hosts; ssh refused to connect. Add it once checked: ssh-keyscan -p 22 10.1.0.11 >> /home/ops/.ssh/known_hosts"
}

@test "ssh inventory: hosts by name need MVP_WORKER_IPS; given, they are used in order" {
  MVP_SSH_WORKERS="gpu-a gpu-b" run resolve
  assert_failure
  assert_output "ERROR: MVP_SSH_WORKERS names host 'gpu-a'; set MVP_WORKER_IPS to every worker's Ray address (IPv4), in the same order"
  MVP_SSH_WORKERS="gpu-a gpu-b" MVP_WORKER_IPS="10.2.0.1 10.2.0.2" run resolve
  assert_success
  assert_line "worker_ips=10.2.0.1 10.2.0.2"
  assert_line "workers=2"
}

@test "ssh inventory: a malformed entry, an empty inventory and a bad MVP_RAY_AUTH are one ERROR line each" {
  MVP_SSH_WORKERS="10.1.0.11 root@@x:22" run resolve
  assert_failure
  assert_output "ERROR: 'root@@x:22' in MVP_SSH_HEAD/MVP_SSH_WORKERS is not [user@]host[:port]; fix your inventory"
  MVP_SSH_WORKERS="" run resolve
  assert_failure
  assert_output "ERROR: MVP_SSH_WORKERS is empty; list the worker nodes as [user@]host[:port], space separated"
  MVP_RAY_AUTH=maybe run resolve
  assert_failure
  assert_output "ERROR: MVP_RAY_AUTH='maybe' must be token or off; fix it where it is set: config file, environment or flag (config/settings.contract: type one-of token off)"
}

@test "MVP_RAY_AUTH: off by default on local, token when set; the token file is on the shared storage" {
  MVP_RUNTIME=local run resolve
  assert_line "auth=off"
  MVP_RUNTIME=local MVP_RAY_AUTH=token SHARED_ROOT=/srv/shared run resolve
  assert_line "auth=token"
  assert_line "token=/srv/shared/secrets/ray_auth_token"
}
