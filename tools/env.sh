# Source this file: it puts the project's pinned tools first on PATH and keeps Pulumi's state and
# plugins inside the checkout unless the caller chose otherwise.
#   source tools/env.sh
_greenops_root=$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")/.." && pwd)
export GREENOPS_ROOT=$_greenops_root
export PATH="$_greenops_root/.tools/bin:$_greenops_root/.venv/bin:$PATH"
export PULUMI_HOME=${PULUMI_HOME:-$_greenops_root/.pulumi/home}
# metadata=skip: no sidecar file rewritten in place, which a concurrent read can find empty
# (greenops/common/file_backend.py)
export PULUMI_BACKEND_URL=${PULUMI_BACKEND_URL:-file://$_greenops_root/.pulumi/state?metadata=skip}
# Local file-backend stacks encrypt secrets with this passphrase; set your own for anything real.
export PULUMI_CONFIG_PASSPHRASE=${PULUMI_CONFIG_PASSPHRASE-greenops-local-dev}
export PULUMI_SKIP_UPDATE_CHECK=true
export PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true
_greenops_state=${PULUMI_BACKEND_URL#file://}
mkdir -p "$PULUMI_HOME" "${_greenops_state%%\?*}" 2>/dev/null || true
unset _greenops_state
unset _greenops_root
