package infra

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// This file evaluates a Terraform root module the way Terraform would plan
// it, as far as that is possible without providers: variables take their
// defaults (or the test's overrides), locals and resource arguments are
// evaluated with HCL, for_each and dynamic blocks are expanded. Attributes
// only a provider knows are unknown, except for a few the checks need,
// which get recognisable stand-ins (see the stand-in functions below).

const (
	testProject       = "test-project"
	testProjectNumber = "123456789012"
)

type tfModule struct {
	vars      map[string]cty.Value
	locals    map[string]cty.Value
	resources []*tfResource
	ctx       *hcl.EvalContext
}

// tfResource is a resource block ("resource" or "ephemeral").
type tfResource struct {
	kind, typ, name string
	body            *hclsyntax.Body
}

// tfInstance is one instance of a resource (one for_each key), or a nested
// block of one, with the context its expressions are evaluated in.
type tfInstance struct {
	key  string // for_each key, "" without for_each
	addr string // for messages: type.name["key"] or a block path
	body *hclsyntax.Body
	ctx  *hcl.EvalContext
}

func loadModule(t *testing.T, dir string, overrides map[string]cty.Value) *tfModule {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.tf"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatalf("no .tf files in %s", dir)
	}
	slices.Sort(paths)
	// The project is the one the stand-ins below name (service accounts'
	// emails, the project number), unless a test sets another.
	if _, ok := overrides["project"]; !ok {
		overrides = maps.Clone(overrides)
		if overrides == nil {
			overrides = map[string]cty.Value{}
		}
		overrides["project"] = cty.StringVal(testProject)
	}
	m := &tfModule{vars: map[string]cty.Value{}, locals: map[string]cty.Value{}}
	parser := hclparse.NewParser()
	localExprs := map[string]hcl.Expression{}
	for _, p := range paths {
		f, diags := parser.ParseHCLFile(p)
		if diags.HasErrors() {
			t.Fatalf("parse %s: %s", p, diags.Error())
		}
		body := f.Body.(*hclsyntax.Body)
		for _, b := range body.Blocks {
			switch b.Type {
			case "variable":
				v, err := variableValue(b, overrides)
				if err != nil {
					t.Fatalf("%s: %v", b.DefRange(), err)
				}
				m.vars[b.Labels[0]] = v
			case "locals":
				for name, a := range b.Body.Attributes {
					if _, dup := localExprs[name]; dup {
						t.Fatalf("%s: local.%s declared twice", a.SrcRange, name)
					}
					localExprs[name] = a.Expr
				}
			case "resource", "ephemeral", "data":
				m.resources = append(m.resources, &tfResource{kind: b.Type, typ: b.Labels[0], name: b.Labels[1], body: b.Body})
			}
		}
	}
	for name := range overrides {
		if _, ok := m.vars[name]; !ok {
			t.Fatalf("override of undeclared variable %q", name)
		}
	}

	m.ctx = &hcl.EvalContext{Variables: map[string]cty.Value{}, Functions: tfFunctions()}
	m.refresh()
	// Service accounts only depend on variables; locals use their emails.
	m.ctx.Variables["google_service_account"] = m.serviceAccounts(t)
	m.ctx.Variables["google_artifact_registry_repository"] = m.repositories(t)
	m.ctx.Variables["data"] = cty.ObjectVal(map[string]cty.Value{
		"google_project": cty.ObjectVal(map[string]cty.Value{
			"this": cty.ObjectVal(map[string]cty.Value{
				"number":     cty.StringVal(testProjectNumber),
				"project_id": cty.StringVal(testProject),
			}),
		}),
	})

	// Locals may refer to each other in any order: evaluate until no more
	// can be.
	for len(localExprs) > 0 {
		var errs []string
		progress := false
		for _, name := range sortedKeys(localExprs) {
			v, diags := localExprs[name].Value(m.ctx)
			if diags.HasErrors() {
				errs = append(errs, fmt.Sprintf("local.%s: %s", name, diags.Error()))
				continue
			}
			m.locals[name] = v
			delete(localExprs, name)
			progress = true
		}
		m.refresh()
		if !progress {
			t.Fatalf("cannot evaluate locals:\n%s", strings.Join(errs, "\n"))
		}
	}
	m.ctx.Variables["google_cloud_run_v2_service"] = m.serviceStandIns(t)
	m.ctx.Variables["terraform_data"] = m.terraformData(t)
	return m
}

// refresh rebuilds the evaluation context's var and local objects and makes
// every other resource type an unknown value.
func (m *tfModule) refresh() {
	m.ctx.Variables["var"] = cty.ObjectVal(m.vars)
	m.ctx.Variables["local"] = cty.ObjectVal(m.locals)
	m.ctx.Variables["path"] = cty.ObjectVal(map[string]cty.Value{"module": cty.StringVal("."), "root": cty.StringVal("."), "cwd": cty.StringVal(".")})
	m.ctx.Variables["ephemeral"] = cty.DynamicVal
	for _, r := range m.resources {
		if r.kind == "resource" {
			if _, ok := m.ctx.Variables[r.typ]; !ok {
				m.ctx.Variables[r.typ] = cty.DynamicVal
			}
		}
	}
}

// variableValue is the override, or the default converted to the declared
// type, or unknown for a required variable.
func variableValue(b *hclsyntax.Block, overrides map[string]cty.Value) (cty.Value, error) {
	ty := cty.DynamicPseudoType
	if a, ok := b.Body.Attributes["type"]; ok {
		t, diags := typeexpr.TypeConstraint(a.Expr)
		if diags.HasErrors() {
			return cty.NilVal, diags
		}
		ty = t
	}
	v, ok := overrides[b.Labels[0]]
	if !ok {
		a, hasDefault := b.Body.Attributes["default"]
		if !hasDefault {
			return cty.UnknownVal(ty), nil
		}
		var diags hcl.Diagnostics
		if v, diags = a.Expr.Value(nil); diags.HasErrors() {
			return cty.NilVal, diags
		}
	}
	if v.IsNull() {
		return cty.NullVal(ty), nil
	}
	return convert.Convert(v, ty)
}

// serviceAccounts stands in for google_service_account: each account's email
// is derived from its account_id.
func (m *tfModule) serviceAccounts(t *testing.T) cty.Value {
	t.Helper()
	accounts := map[string]cty.Value{}
	for _, r := range m.resources {
		if r.kind != "resource" || r.typ != "google_service_account" {
			continue
		}
		in := tfInstance{addr: r.typ + "." + r.name, body: r.body, ctx: m.ctx}
		id := in.str(t, "account_id")
		email := id + "@" + testProject + ".iam.gserviceaccount.com"
		accounts[r.name] = cty.ObjectVal(map[string]cty.Value{
			"account_id": cty.StringVal(id),
			"email":      cty.StringVal(email),
			"id":         cty.StringVal("projects/" + testProject + "/serviceAccounts/" + email),
			"name":       cty.StringVal("projects/" + testProject + "/serviceAccounts/" + email),
			"member":     cty.StringVal("serviceAccount:" + email),
		})
	}
	return cty.ObjectVal(accounts)
}

// repositories stands in for google_artifact_registry_repository: its
// repository_id and location are its own arguments, so the image's name is
// known before apply, as it is to Terraform.
func (m *tfModule) repositories(t *testing.T) cty.Value {
	t.Helper()
	repos := map[string]cty.Value{}
	for _, r := range m.resources {
		if r.kind != "resource" || r.typ != "google_artifact_registry_repository" {
			continue
		}
		in := tfInstance{addr: r.typ + "." + r.name, body: r.body, ctx: m.ctx}
		id, location := in.str(t, "repository_id"), in.str(t, "location")
		repos[r.name] = cty.ObjectVal(map[string]cty.Value{
			"repository_id": cty.StringVal(id),
			"location":      cty.StringVal(location),
			"name":          cty.StringVal("projects/" + testProject + "/locations/" + location + "/repositories/" + id),
		})
	}
	return cty.ObjectVal(repos)
}

// serviceStandIns stands in for google_cloud_run_v2_service: instance
// attributes name the service, so that references to a service's name or
// URI can be traced back to it.
func (m *tfModule) serviceStandIns(t *testing.T) cty.Value {
	t.Helper()
	byName := map[string]cty.Value{}
	for _, r := range m.resources {
		if r.kind != "resource" || r.typ != "google_cloud_run_v2_service" {
			continue
		}
		instances := map[string]cty.Value{}
		var single cty.Value
		for _, in := range m.expand(t, r) {
			name := in.str(t, "name")
			v := cty.ObjectVal(map[string]cty.Value{
				"name":     cty.StringVal(name),
				"id":       cty.StringVal(serviceOf(name)),
				"uri":      cty.StringVal(serviceURI(name)),
				"location": in.value(t, "location"),
			})
			instances[in.key] = v
			single = v
		}
		if _, hasForEach := r.body.Attributes["for_each"]; hasForEach {
			byName[r.name] = cty.ObjectVal(instances)
		} else {
			byName[r.name] = single
		}
	}
	return cty.ObjectVal(byName)
}

// terraformData stands in for terraform_data: its output is its input, as
// Terraform plans it.
func (m *tfModule) terraformData(t *testing.T) cty.Value {
	t.Helper()
	out := map[string]cty.Value{}
	for _, r := range m.resources {
		if r.kind != "resource" || r.typ != "terraform_data" {
			continue
		}
		in := tfInstance{addr: r.typ + "." + r.name, body: r.body, ctx: m.ctx}
		input := in.value(t, "input")
		out[r.name] = cty.ObjectVal(map[string]cty.Value{"input": input, "output": input})
	}
	return cty.ObjectVal(out)
}

func serviceOf(name string) string {
	return "projects/" + testProject + "/locations/stand-in/services/" + name
}
func serviceURI(name string) string { return "https://" + name + "-stand-in.a.run.app" }

// archiveHash stands in for filesha256(path): a known value, distinct per
// path, so that names derived from the archive's hash can be checked.
func archiveHash(path string) string {
	sum := sha256.Sum256([]byte("stand-in archive " + path))
	return hex.EncodeToString(sum[:])
}

// instances returns every instance of the resources of a type.
func (m *tfModule) instances(t *testing.T, typ string) []tfInstance {
	t.Helper()
	var all []tfInstance
	for _, r := range m.resources {
		if r.kind == "resource" && r.typ == typ {
			all = append(all, m.expand(t, r)...)
		}
	}
	return all
}

// expand evaluates a resource's for_each or count.
func (m *tfModule) expand(t *testing.T, r *tfResource) []tfInstance {
	t.Helper()
	addr := r.typ + "." + r.name
	if a, ok := r.body.Attributes["for_each"]; ok {
		v, diags := a.Expr.Value(m.ctx)
		if diags.HasErrors() {
			t.Fatalf("%s for_each: %s", addr, diags.Error())
		}
		if !v.IsKnown() || v.IsNull() {
			t.Fatalf("%s for_each is not known before apply", addr)
		}
		var out []tfInstance
		for it := v.ElementIterator(); it.Next(); {
			k, val := it.Element()
			if v.Type().IsSetType() {
				k = val
			}
			key := k.AsString()
			ctx := m.ctx.NewChild()
			ctx.Variables = map[string]cty.Value{"each": cty.ObjectVal(map[string]cty.Value{"key": k, "value": val})}
			out = append(out, tfInstance{key: key, addr: fmt.Sprintf("%s[%q]", addr, key), body: r.body, ctx: ctx})
		}
		return out
	}
	if a, ok := r.body.Attributes["count"]; ok {
		v, diags := a.Expr.Value(m.ctx)
		if diags.HasErrors() || !v.IsKnown() {
			t.Fatalf("%s count: %s", addr, diags.Error())
		}
		n, _ := v.AsBigFloat().Int64()
		var out []tfInstance
		for i := range n {
			ctx := m.ctx.NewChild()
			ctx.Variables = map[string]cty.Value{"count": cty.ObjectVal(map[string]cty.Value{"index": cty.NumberIntVal(i)})}
			out = append(out, tfInstance{key: fmt.Sprint(i), addr: fmt.Sprintf("%s[%d]", addr, i), body: r.body, ctx: ctx})
		}
		return out
	}
	return []tfInstance{{addr: addr, body: r.body, ctx: m.ctx}}
}

// blocks returns the nested blocks of a type, static or generated by a
// dynamic block.
func (in tfInstance) blocks(t *testing.T, typ string) []tfInstance {
	t.Helper()
	var out []tfInstance
	for _, b := range in.body.Blocks {
		switch {
		case b.Type == typ:
			out = append(out, tfInstance{key: in.key, addr: in.addr + "." + typ, body: b.Body, ctx: in.ctx})
		case b.Type == "dynamic" && len(b.Labels) == 1 && b.Labels[0] == typ:
			dyn := tfInstance{key: in.key, addr: in.addr + ".dynamic." + typ, body: b.Body, ctx: in.ctx}
			iterator := typ
			if _, ok := b.Body.Attributes["iterator"]; ok {
				t.Fatalf("%s: iterator is not supported by this test", dyn.addr)
			}
			each := dyn.value(t, "for_each")
			if !each.IsKnown() || each.IsNull() {
				t.Fatalf("%s: for_each is not known before apply", dyn.addr)
			}
			var content *hclsyntax.Body
			for _, c := range b.Body.Blocks {
				if c.Type == "content" {
					content = c.Body
				}
			}
			for it := each.ElementIterator(); it.Next(); {
				k, v := it.Element()
				ctx := in.ctx.NewChild()
				ctx.Variables = map[string]cty.Value{iterator: cty.ObjectVal(map[string]cty.Value{"key": k, "value": v})}
				out = append(out, tfInstance{key: in.key, addr: dyn.addr, body: content, ctx: ctx})
			}
		}
	}
	return out
}

// block returns the one nested block at path (e.g. "build_config").
func (in tfInstance) block(t *testing.T, path ...string) tfInstance {
	t.Helper()
	for _, typ := range path {
		bs := in.blocks(t, typ)
		if len(bs) != 1 {
			t.Fatalf("%s: %d %s blocks, want 1", in.addr, len(bs), typ)
		}
		in = bs[0]
	}
	return in
}

// has reports whether the argument is set.
func (in tfInstance) has(name string) bool {
	_, ok := in.body.Attributes[name]
	return ok
}

// value evaluates an argument; a missing one is null.
func (in tfInstance) value(t *testing.T, name string) cty.Value {
	t.Helper()
	a, ok := in.body.Attributes[name]
	if !ok {
		return cty.NullVal(cty.DynamicPseudoType)
	}
	v, diags := a.Expr.Value(in.ctx)
	if diags.HasErrors() {
		t.Fatalf("%s.%s: %s", in.addr, name, diags.Error())
	}
	return v
}

// str evaluates an argument that must be a string known before apply.
func (in tfInstance) str(t *testing.T, name string) string {
	t.Helper()
	v := in.value(t, name)
	if v.IsNull() {
		t.Fatalf("%s.%s is not set", in.addr, name)
	}
	if !v.IsWhollyKnown() {
		t.Fatalf("%s.%s is not known before apply", in.addr, name)
	}
	s, err := convert.Convert(v, cty.String)
	if err != nil {
		t.Fatalf("%s.%s: %v", in.addr, name, err)
	}
	return s.AsString()
}

// num evaluates an argument that must be a known number.
func (in tfInstance) num(t *testing.T, name string) int64 {
	t.Helper()
	v := in.value(t, name)
	if v.IsNull() || !v.IsWhollyKnown() || v.Type() != cty.Number {
		t.Fatalf("%s.%s = %#v, want a known number", in.addr, name, v)
	}
	n, _ := v.AsBigFloat().Int64()
	return n
}

// tfFunctions are the Terraform functions the configuration uses; a
// function missing here fails the test where it is called.
func tfFunctions() map[string]function.Function {
	unknownString := function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func([]cty.Value, cty.Type) (cty.Value, error) {
			return cty.UnknownVal(cty.String), nil // a file's hash: known only to the real run
		},
	})
	fileHash := function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			return cty.StringVal(archiveHash(args[0].AsString())), nil
		},
	})
	return map[string]function.Function{
		"ceil":       stdlib.CeilFunc,
		"coalesce":   stdlib.CoalesceFunc,
		"concat":     stdlib.ConcatFunc,
		"contains":   stdlib.ContainsFunc,
		"filemd5":    unknownString,
		"filesha256": fileHash,
		"floor":      stdlib.FloorFunc,
		"jsonencode": stdlib.JSONEncodeFunc,
		"format":     stdlib.FormatFunc,
		"join":       stdlib.JoinFunc,
		"keys":       stdlib.KeysFunc,
		"length":     stdlib.LengthFunc,
		"lookup":     stdlib.LookupFunc,
		"lower":      stdlib.LowerFunc,
		"max":        stdlib.MaxFunc,
		"merge":      stdlib.MergeFunc,
		"min":        stdlib.MinFunc,
		"regex":      stdlib.RegexFunc,
		"replace":    stdlib.ReplaceFunc,
		"setproduct": stdlib.SetProductFunc,
		"sort":       stdlib.SortFunc,
		"split":      stdlib.SplitFunc,
		"tolist":     stdlib.MakeToFunc(cty.List(cty.DynamicPseudoType)),
		"tomap":      stdlib.MakeToFunc(cty.Map(cty.DynamicPseudoType)),
		"tonumber":   stdlib.MakeToFunc(cty.Number),
		"toset":      stdlib.MakeToFunc(cty.Set(cty.DynamicPseudoType)),
		"tostring":   stdlib.MakeToFunc(cty.String),
		"upper":      stdlib.UpperFunc,
		"values":     stdlib.ValuesFunc,
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// stringMap converts a known map or object of strings; unknown values are
// reported as ok=false in known.
func stringMap(t *testing.T, addr string, v cty.Value) (values map[string]string, unknown map[string]bool) {
	t.Helper()
	if v.IsNull() {
		return map[string]string{}, map[string]bool{}
	}
	if !v.CanIterateElements() || !v.IsKnown() {
		t.Fatalf("%s = %#v, want a map known before apply", addr, v)
	}
	values, unknown = map[string]string{}, map[string]bool{}
	for it := v.ElementIterator(); it.Next(); {
		k, e := it.Element()
		if !e.IsWhollyKnown() {
			unknown[k.AsString()] = true
			values[k.AsString()] = ""
			continue
		}
		s, err := convert.Convert(e, cty.String)
		if err != nil {
			t.Fatalf("%s[%q]: %v", addr, k.AsString(), err)
		}
		values[k.AsString()] = s.AsString()
	}
	return values, unknown
}

// terraformDir is infra/terraform, relative to this package.
func terraformDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join("terraform")
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}
