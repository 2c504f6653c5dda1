"""KubeRay's manifests (71_render_kuberay.sh) and KubeRay's own rules they pass."""
