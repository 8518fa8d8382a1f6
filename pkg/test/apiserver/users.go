package apiserver

import (
	"os"
	"path/filepath"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// UserKubeconfigFile writes into dir a kubeconfig for a user of the given name and groups,
// authenticated by a client certificate, and returns its path: a test grants the user what it
// needs through RBAC (the server authorizes with RBAC) to hold a command to those rights.
func (e *Env) UserKubeconfigFile(dir, name string, groups ...string) (string, error) {
	user, err := e.env.ControlPlane.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	if err != nil {
		return "", err
	}
	data, err := user.KubeConfig()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, name+".kubeconfig")
	return path, os.WriteFile(path, data, 0o600)
}
