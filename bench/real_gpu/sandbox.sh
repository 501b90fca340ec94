# Sourced by run.sh and session8.sh on the lent NVIDIA machine: installs the carried wheels (from
# $WHEELS) and lays out $W: the demo kernel repo, tickets and lock folders, and the env file.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$WHEELS"/*.whl || exit 1
export PYTHONPATH=/tmp/site:$top PYTHONUNBUFFERED=1
W=/tmp/rg; rm -rf $W; mkdir -p $W/repos $W/tickets $W/locks
cp -r "$here/repo" $W/repos/aiter
cp "$here/load.py" $W/repos/aiter/op_tests/gpu_load.py  # the gpu-load target: another user's load, as a target
git -C $W/repos/aiter init -q -b main && git -C $W/repos/aiter add -A && git -C $W/repos/aiter -c user.name=b -c user.email=b@b commit -qm kernels
cat > $W/env.md <<ENV
## Resources
| resource | path |
|---|---|
| tickets | $W/tickets |
## Hosts
| host | ssh alias | arch | gpus |
|---|---|---|---|
| $(hostname) | local | sm_90 | $(nvidia-smi -L | wc -l) |
## Repos
| repo | path | container | mount |
|---|---|---|---|
| aiter | $W/repos/aiter | not set | $W/repos/aiter |
## Containers
| name | image | host |
|---|---|---|
## GPU lock
| host | picker | lock |
|---|---|---|
| $(hostname) | builtin | \`flock -E 75 -w 600 $W/locks/gpu-<id>.lock\` |
ENV
