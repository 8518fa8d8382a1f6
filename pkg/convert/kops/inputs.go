package kops

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/openkarpenter/karpenter/pkg/convert"
)

// nodeupScriptName is the file name kOps gives a group's nodeup script in the state store,
// under igconfig/node/<group>/.
const nodeupScriptName = "nodeupscript.sh"

// LoadUserData reads the nodeup scripts of a directory, one per InstanceGroup, for
// Options.UserData. A group's script is <dir>/<group>/nodeupscript.sh (the layout of the
// state store's igconfig/node/ folder, so `aws s3 cp --recursive s3://STATE/CLUSTER/igconfig/node DIR`
// fills it) or <dir>/<group>.sh; having both is an error.
func LoadUserData(dir string) (map[string]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading nodeup scripts: %w", err)
	}
	scripts := map[string]string{}
	from := map[string]string{}
	for _, entry := range entries {
		var group, path string
		switch {
		case entry.IsDir():
			group, path = entry.Name(), filepath.Join(dir, entry.Name(), nodeupScriptName)
		case strings.HasSuffix(entry.Name(), ".sh"):
			group, path = strings.TrimSuffix(entry.Name(), ".sh"), filepath.Join(dir, entry.Name())
		default:
			continue
		}
		data, err := os.ReadFile(path)
		if entry.IsDir() && errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading nodeup script: %w", err)
		}
		if previous, ok := from[group]; ok {
			return nil, fmt.Errorf("two nodeup scripts for InstanceGroup %q: %s and %s", group, previous, path)
		}
		scripts[group], from[group] = string(data), path
	}
	return scripts, nil
}

// ExistingNodePools reads NodePools (such as `kubectl get nodepools -o yaml` prints) for
// Options.ExistingNodePools: each name maps to whether the NodePool is static. Other documents
// are ignored.
func ExistingNodePools(sources []convert.Source) (map[string]bool, error) {
	existing := map[string]bool{}
	for _, src := range sources {
		if src.Kind != "NodePool" || src.Group() != "karpenter.sh" {
			continue
		}
		var pool struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Spec struct {
				Replicas *int64 `json:"replicas"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(src.JSON, &pool); err != nil {
			return nil, src.DecodeError(err, &pool, src.JSON)
		}
		existing[pool.Metadata.Name] = pool.Spec.Replicas != nil
	}
	return existing, nil
}
