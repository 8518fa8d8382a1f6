// Package settings checks, from Karpenter's own sources, that every setting and feature gate
// of the reference release is known to our controller: read, or refused at start with a
// message naming it. The next release's additions fail here until they are handled.
package settings

import (
	"errors"
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	coreoptions "sigs.k8s.io/karpenter/pkg/operator/options"

	"github.com/openkarpenter/karpenter/pkg/featuregate"
	"github.com/openkarpenter/karpenter/test/conformance/internal/upstream"
)

// awsOptionsFile is the AWS provider's options source at the reference release, v1.15.2: its
// module cannot be required here (it needs core v1.15.1, which the module proxy does not
// serve), so the file is kept as it is published (pkg/operator/options/options.go).
const awsOptionsFile = "testdata/karpenter-provider-aws-v1.15.2-options.go.txt"

// refused are Karpenter settings whose feature is not built here: a value other than
// Karpenter's default stops our controller with a message naming the setting. The README's
// "Settings" section lists the same, with the same reasons.
var refused = []struct {
	env, value, reason string
}{
	{"IGNORE_DRA_REQUESTS", "false", "provisioning for pods with resource claims (DRA) is not built"},
}

// option is one setting of Karpenter's: its flag and the environment variable that defaults it.
type option struct {
	flag, env string
	// def is the default's source text.
	def string
}

// addFlagsOptions reads the settings an options source declares in its AddFlags method: calls
// fs.XVar(&o.F, "flag", env.WithDefaultX("ENV", default), usage) and
// fs.BoolVarWithEnv(&o.F, "flag", "ENV", default, usage).
func addFlagsOptions(t *testing.T, path string) []option {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, path, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	text := func(n ast.Node) string {
		return string(src[fset.Position(n.Pos()).Offset:fset.Position(n.End()).Offset])
	}
	literal := func(e ast.Expr) string {
		lit, ok := e.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			t.Fatalf("%s: %s is not a string literal", fset.Position(e.Pos()), text(e))
		}
		s, _ := strconv.Unquote(lit.Value)
		return s
	}
	var opts []option
	for _, decl := range file.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "AddFlags" {
			continue
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !strings.HasSuffix(sel.Sel.Name, "Var") && sel.Sel.Name != "BoolVarWithEnv" || len(call.Args) < 4 {
				return true
			}
			o := option{flag: literal(call.Args[1])}
			if sel.Sel.Name == "BoolVarWithEnv" {
				o.env, o.def = literal(call.Args[2]), text(call.Args[3])
			} else {
				def, ok := call.Args[2].(*ast.CallExpr)
				if !ok || len(def.Args) != 2 {
					t.Fatalf("%s: the default of --%s is not read from the environment: %s", fset.Position(call.Pos()), o.flag, text(call.Args[2]))
				}
				o.env, o.def = literal(def.Args[0]), text(def.Args[1])
			}
			opts = append(opts, o)
			return false
		})
	}
	if len(opts) == 0 {
		t.Fatalf("%s: no settings found in AddFlags", path)
	}
	return opts
}

// ourHelp builds our binary and returns it and its controller's flags: each flag's name and the
// environment variables its help names.
func ourHelp(t *testing.T) (string, map[string][]string) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "karpenter")
	build := exec.Command("go", "build", "-o", bin, "./cmd/karpenter")
	build.Dir = filepath.Join("..", "..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building karpenter: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "controller", "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("karpenter controller --help: %v\n%s", err, out)
	}
	flagRE, envRE := regexp.MustCompile(`^\s*(?:-\w, )?--([a-z0-9-]+)`), regexp.MustCompile(`\(([A-Z][A-Z0-9_]+)\)`)
	flags := map[string][]string{}
	for _, line := range strings.Split(string(out), "\n") {
		m := flagRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		for _, e := range envRE.FindAllStringSubmatch(line, -1) {
			flags[m[1]] = append(flags[m[1]], e[1])
		}
	}
	if len(flags) < 20 {
		t.Fatalf("karpenter controller --help: only %d flags read:\n%s", len(flags), out)
	}
	return bin, flags
}

// TestEverySettingKnown: every flag and environment variable of Karpenter core v1.15.0's and the
// AWS provider v1.15.2's options is one of our controller's, by the same names; the settings
// whose feature is not built stop it at start naming the setting.
func TestEverySettingKnown(t *testing.T) {
	core := addFlagsOptions(t, upstream.CoreFile(t, "pkg/operator/options/options.go"))
	// The parse is checked against the flags core itself registers.
	fs := coreoptions.FlagSet{FlagSet: flag.NewFlagSet("karpenter", flag.ContinueOnError)}
	(&coreoptions.Options{}).AddFlags(&fs)
	var registered, parsed []string
	fs.VisitAll(func(f *flag.Flag) { registered = append(registered, f.Name) })
	for _, o := range core {
		parsed = append(parsed, o.flag)
	}
	slices.Sort(registered)
	slices.Sort(parsed)
	if !slices.Equal(registered, parsed) {
		t.Fatalf("core's AddFlags registers %v, the source parse found %v", registered, parsed)
	}
	aws := addFlagsOptions(t, awsOptionsFile)

	bin, ours := ourHelp(t)
	for _, o := range append(core, aws...) {
		envs, ok := ours[o.flag]
		switch {
		case !ok:
			t.Errorf("Karpenter's --%s (%s) is not a flag of karpenter controller", o.flag, o.env)
		case !slices.Contains(envs, o.env):
			t.Errorf("our --%s is read from %v, Karpenter's from %s", o.flag, envs, o.env)
		}
	}
	for _, r := range refused {
		if !slices.ContainsFunc(append(core, aws...), func(o option) bool { return o.env == r.env }) {
			t.Errorf("%s is refused here but is no longer a Karpenter setting: drop it from refused", r.env)
		}
		cmd := exec.Command(bin, "controller", "--metrics-bind-address", "0", "--health-probe-bind-address", "0")
		cmd.Env = append(os.Environ(), r.env+"="+r.value)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), r.env) {
			t.Errorf("%s=%s: want exit code 2 and a message naming %s (%s), got %v:\n%s", r.env, r.value, r.env, r.reason, err, out)
		}
	}
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range refused {
		if !strings.Contains(string(readme), "| `"+r.env+"` |") {
			t.Errorf("README.md does not list the refused setting %s", r.env)
		}
	}
}

// TestEveryFeatureGateKnown: every feature gate of Karpenter core v1.15.0
// (options.KarpenterFeatureGates) and of the AWS provider v1.15.2 (the default of
// AWS_FEATURE_GATES) is in our tables with Karpenter's default and stage.
func TestEveryFeatureGateKnown(t *testing.T) {
	for _, g := range coreoptions.KarpenterFeatureGates {
		ours, ok := featuregate.Karpenter.Lookup(g.Name)
		switch {
		case !ok:
			t.Errorf("Karpenter's gate %s is not in featuregate.Karpenter", g.Name)
		case ours.Default != g.Default:
			t.Errorf("gate %s: our default %v, Karpenter's %v", g.Name, ours.Default, g.Default)
		case !strings.EqualFold(ours.Stage, string(g.Stage)):
			t.Errorf("gate %s: our stage %s, Karpenter's %s", g.Name, ours.Stage, g.Stage)
		}
	}
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range []featuregate.Table{featuregate.Karpenter, featuregate.AWS} {
		for _, g := range table.Gates {
			if g.Support == featuregate.NotBuilt && !strings.Contains(string(readme), "| `"+g.Name+"`") {
				t.Errorf("README.md does not list the refused gate %s", g.Name)
			}
		}
	}
	var awsGates string
	for _, o := range addFlagsOptions(t, awsOptionsFile) {
		if o.env == "AWS_FEATURE_GATES" {
			awsGates, _ = strconv.Unquote(o.def)
		}
	}
	if awsGates == "" {
		t.Fatalf("%s: no AWS_FEATURE_GATES default", awsOptionsFile)
	}
	for _, item := range strings.Split(awsGates, ",") {
		name, value, _ := strings.Cut(item, "=")
		def, err := strconv.ParseBool(value)
		if err != nil {
			t.Fatalf("AWS_FEATURE_GATES default %q: %v", awsGates, err)
		}
		ours, ok := featuregate.AWS.Lookup(name)
		switch {
		case !ok:
			t.Errorf("the AWS provider's gate %s is not in featuregate.AWS", name)
		case ours.Default != def:
			t.Errorf("AWS gate %s: our default %v, Karpenter's %v", name, ours.Default, def)
		}
	}
}
