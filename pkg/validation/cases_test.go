package validation_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"
)

// apisTestFile holds the API tests whose cases this package reuses, so that every object the
// real API server is known to refuse there is also checked offline here, and stays so as cases
// are added.
const apisTestFile = "../apis/apis_test.go"

// apisCases are the cases of apisTestFile: the base objects by kind, the invalid objects (a
// patch over a base object, the field and the message the server must name) and the forbidden
// transitions.
type apisCases struct {
	bases    map[string]string
	invalids []invalidCase
	updates  []updateCase
}

type invalidCase struct{ name, kind, patch, field, message string }

type updateCase struct{ name, kind, create, update, message string }

// loadAPIsCases reads apisTestFile's syntax tree: the constants baseNodePool, baseEC2NodeClass
// and baseNodeClaim, the table `var invalids = []invalid{...}` (fields named by the struct
// `invalid`) and the `cases` table of TestInvalidUpdates. The values are string literals,
// concatenations and strings.Repeat calls.
func loadAPIsCases(t testing.TB) apisCases {
	t.Helper()
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, apisTestFile, nil, 0)
	if err != nil {
		t.Fatalf("parsing %s: %v", apisTestFile, err)
	}
	consts := map[string]ast.Expr{}
	var invalidFields []string
	var invalidTable, updateTable *ast.CompositeLit
	for _, decl := range file.Decls {
		switch d := decl.(type) {
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.ValueSpec:
					for i, name := range s.Names {
						if i >= len(s.Values) {
							continue
						}
						if d.Tok == token.CONST {
							consts[name.Name] = s.Values[i]
						}
						if lit, ok := s.Values[i].(*ast.CompositeLit); ok && name.Name == "invalids" {
							invalidTable = lit
						}
					}
				case *ast.TypeSpec:
					if st, ok := s.Type.(*ast.StructType); ok && s.Name.Name == "invalid" {
						invalidFields = structFieldNames(st)
					}
				}
			}
		case *ast.FuncDecl:
			if d.Name.Name == "TestInvalidUpdates" {
				updateTable = findAssignedLiteral(d.Body, "cases")
			}
		}
	}
	ev := evaluator{consts: consts}
	out := apisCases{bases: map[string]string{}}
	for kind, name := range map[string]string{"NodePool": "baseNodePool", "EC2NodeClass": "baseEC2NodeClass", "NodeClaim": "baseNodeClaim"} {
		expr, ok := consts[name]
		if !ok {
			t.Fatalf("%s: no const %s", apisTestFile, name)
		}
		if out.bases[kind], err = ev.str(expr); err != nil {
			t.Fatalf("%s: %s: %v", apisTestFile, name, err)
		}
	}
	if invalidTable == nil || len(invalidFields) != 5 {
		t.Fatalf("%s: no `var invalids = []invalid{...}` with a five-field struct invalid", apisTestFile)
	}
	for _, elt := range invalidTable.Elts {
		row, err := ev.row(elt, invalidFields)
		if err != nil {
			t.Fatalf("%s: %s: %v", apisTestFile, fset.Position(elt.Pos()), err)
		}
		out.invalids = append(out.invalids, invalidCase{row["name"], row["kind"], row["patch"], row["field"], row["message"]})
	}
	if updateTable == nil {
		t.Fatalf("%s: no `cases := ...` table in TestInvalidUpdates", apisTestFile)
	}
	updateFields := []string{"name", "kind", "create", "update", "message"}
	if st, ok := updateTable.Type.(*ast.ArrayType); ok {
		if s, ok := st.Elt.(*ast.StructType); ok {
			updateFields = structFieldNames(s)
		}
	}
	for _, elt := range updateTable.Elts {
		row, err := ev.row(elt, updateFields)
		if err != nil {
			t.Fatalf("%s: %s: %v", apisTestFile, fset.Position(elt.Pos()), err)
		}
		out.updates = append(out.updates, updateCase{row["name"], row["kind"], row["create"], row["update"], row["message"]})
	}
	if len(out.invalids) == 0 || len(out.updates) == 0 {
		t.Fatalf("%s: empty tables", apisTestFile)
	}
	return out
}

func structFieldNames(st *ast.StructType) []string {
	var names []string
	for _, f := range st.Fields.List {
		for _, n := range f.Names {
			names = append(names, n.Name)
		}
	}
	return names
}

// findAssignedLiteral returns the composite literal assigned to name in body.
func findAssignedLiteral(body *ast.BlockStmt, name string) *ast.CompositeLit {
	var found *ast.CompositeLit
	ast.Inspect(body, func(n ast.Node) bool {
		a, ok := n.(*ast.AssignStmt)
		if !ok || found != nil {
			return found == nil
		}
		for i, lhs := range a.Lhs {
			if id, ok := lhs.(*ast.Ident); ok && id.Name == name && i < len(a.Rhs) {
				if lit, ok := a.Rhs[i].(*ast.CompositeLit); ok {
					found = lit
				}
			}
		}
		return found == nil
	})
	return found
}

// evaluator computes the string values of the tables' expressions.
type evaluator struct{ consts map[string]ast.Expr }

// row evaluates one table row, positional or keyed, into its fields by name.
func (e evaluator) row(elt ast.Expr, fields []string) (map[string]string, error) {
	lit, ok := elt.(*ast.CompositeLit)
	if !ok {
		return nil, fmt.Errorf("row is a %T, not a composite literal", elt)
	}
	row := map[string]string{}
	for i, v := range lit.Elts {
		key := ""
		if kv, ok := v.(*ast.KeyValueExpr); ok {
			key, v = kv.Key.(*ast.Ident).Name, kv.Value
		} else if i < len(fields) {
			key = fields[i]
		}
		s, err := e.str(v)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", key, err)
		}
		row[key] = s
	}
	return row, nil
}

func (e evaluator) str(expr ast.Expr) (string, error) {
	switch x := expr.(type) {
	case *ast.BasicLit:
		if x.Kind != token.STRING {
			return "", fmt.Errorf("literal %s is not a string", x.Value)
		}
		return strconv.Unquote(x.Value)
	case *ast.Ident:
		if c, ok := e.consts[x.Name]; ok {
			return e.str(c)
		}
		return "", fmt.Errorf("unknown identifier %s", x.Name)
	case *ast.ParenExpr:
		return e.str(x.X)
	case *ast.BinaryExpr:
		if x.Op != token.ADD {
			return "", fmt.Errorf("operator %s", x.Op)
		}
		l, err := e.str(x.X)
		if err != nil {
			return "", err
		}
		r, err := e.str(x.Y)
		return l + r, err
	case *ast.CallExpr:
		if sel, ok := x.Fun.(*ast.SelectorExpr); ok && len(x.Args) == 2 {
			if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "strings" && sel.Sel.Name == "Repeat" {
				s, err := e.str(x.Args[0])
				if err != nil {
					return "", err
				}
				n, ok := x.Args[1].(*ast.BasicLit)
				if !ok || n.Kind != token.INT {
					return "", fmt.Errorf("strings.Repeat count is not an integer literal")
				}
				count, err := strconv.Atoi(n.Value)
				if err != nil {
					return "", err
				}
				return strings.Repeat(s, count), nil
			}
		}
		return "", fmt.Errorf("call other than strings.Repeat")
	}
	return "", fmt.Errorf("cannot evaluate a %T", expr)
}
