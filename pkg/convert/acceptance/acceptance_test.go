package acceptance_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openkarpenter/karpenter/pkg/convert"
	"github.com/openkarpenter/karpenter/pkg/convert/eksctl"
	"github.com/openkarpenter/karpenter/pkg/convert/internal/golden"
	"github.com/openkarpenter/karpenter/pkg/convert/kops"
	"github.com/openkarpenter/karpenter/pkg/convert/legacy"
	"github.com/openkarpenter/karpenter/pkg/test/apiserver"
)

var env *apiserver.Env

func TestMain(m *testing.M) { os.Exit(apiserver.Main(m, &env)) }

// converter runs one package's conversion for a golden case.
type converter func(t testing.TB, c golden.Case) (*convert.Result, error)

// TestAPIServerAcceptsEveryOutput renders each converter's output for each golden case that
// succeeds and creates every Kubernetes object in it (dry run, strict fields).
func TestAPIServerAcceptsEveryOutput(t *testing.T) {
	suites := []struct {
		name    string
		convert converter
	}{
		{"kops", convertKops},
		{"legacy", convertLegacy},
		{"eksctl", convertEksctl},
	}
	total := 0
	for _, suite := range suites {
		for _, c := range golden.Cases(t, filepath.Join("..", suite.name, "testdata")) {
			if c.ExpectsErrors() {
				continue
			}
			t.Run(suite.name+"/"+c.Name, func(t *testing.T) {
				result, err := suite.convert(t, c)
				if err != nil {
					t.Fatalf("conversion failed: %v", err)
				}
				for _, doc := range result.Documents {
					if _, ok := doc.Content.(runtime.Object); !ok {
						continue
					}
					create(t, doc)
					total++
				}
			})
		}
	}
	if total < 50 {
		t.Errorf("only %d objects were tried; the golden cases should produce more", total)
	}
}

// create renders a document as the command prints it, reads it back as an unstructured object
// and creates it on the API server as a dry run, refusing unknown fields.
func create(t *testing.T, doc convert.Document) {
	t.Helper()
	u, data := golden.Unstructured(t, doc)
	if err := env.Client.Create(context.Background(), u, client.DryRunAll, client.FieldValidation("Strict")); err != nil {
		t.Errorf("%s %s refused: %v\n%s", u.GetKind(), u.GetName(), err, data)
	}
}

func convertKops(t testing.TB, c golden.Case) (*convert.Result, error) {
	t.Helper()
	var opts kops.Options
	c.Options(t, &opts)
	if c.Has("userdata") {
		scripts, err := kops.LoadUserData(c.Path("userdata"))
		if err != nil {
			t.Fatal(err)
		}
		if opts.UserData == nil {
			opts.UserData = map[string]string{}
		}
		for k, v := range scripts {
			opts.UserData[k] = v
		}
	}
	return kops.Convert(c.Sources(t), opts)
}

func convertLegacy(t testing.TB, c golden.Case) (*convert.Result, error) {
	t.Helper()
	var opts legacy.Options
	c.Options(t, &opts)
	return legacy.Convert(c.Sources(t), opts)
}

func convertEksctl(t testing.TB, c golden.Case) (*convert.Result, error) {
	t.Helper()
	var opts eksctl.Options
	c.Options(t, &opts)
	return eksctl.Convert(c.Sources(t), opts)
}
