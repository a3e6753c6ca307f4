package op_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/harnessd/harnessd/harness/op"
	"github.com/harnessd/harnessd/harness/ops"
)

func TestPlainArguments(t *testing.T) {
	reg := ops.Registry()
	rf, _ := reg.Lookup("read_file")
	tests := []struct {
		name, args string
		plain      bool
	}{
		{"the canonical names", `{"repo_id":"r","path":"a.go"}`, true},
		{"every plain member, spaced", " {\n \"repo_id\" : \"r\" ,\"path\":\"a \\\"b\\\" \\u00e9\",\"offset_line\":-3,\"max_lines\":0,\"include_latency_breakdown\":true,\"run_id\":\"x\"}\t", true},
		{"a required member missing", `{"repo_id":"r"}`, false},
		{"an alias", `{"repo_id":"r","file_path":"a.go"}`, false},
		{"camelCase", `{"repoId":"r","path":"a.go"}`, false},
		{"a null", `{"repo_id":"r","path":"a.go","max_lines":null}`, false},
		{"an unknown member", `{"repo_id":"r","path":"a.go","x":1}`, false},
		{"a member twice", `{"repo_id":"r","path":"a.go","path":"b.go"}`, false},
		{"a string for an integer", `{"repo_id":"r","path":"a.go","max_lines":"5"}`, false},
		{"a fraction for an integer", `{"repo_id":"r","path":"a.go","max_lines":5.0}`, false},
		{"an exponent for an integer", `{"repo_id":"r","path":"a.go","max_lines":5e1}`, false},
		{"an integer past float64's exact range", `{"repo_id":"r","path":"a.go","max_lines":12345678901234567}`, false},
		{"an integer for a string", `{"repo_id":1,"path":"a.go"}`, false},
		{"an escaped name", `{"repo_id":"r","pat\u0068":"a.go"}`, false},
		{"an object", `{"repo_id":"r","path":{"a":1}}`, false},
		{"invalid JSON", `{"repo_id":"r","path":"a.go"`, false},
		{"trailing bytes", `{"repo_id":"r","path":"a.go"} {}`, false},
		{"not an object", `["repo_id"]`, false},
		{"empty", ``, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := rf.CheckPlain(json.RawMessage(tt.args), false); got != tt.plain {
				t.Fatalf("plain = %v, want %v", got, tt.plain)
			}
		})
	}
	// An operation without required members takes {} (and no arguments)
	// as plain; one whose schema is not plain never skips the validator.
	gs, _ := reg.Lookup("git_status")
	if !gs.CheckPlain(json.RawMessage(`{"repo_id":"r"}`), false) {
		t.Error("git_status {repo_id}: not plain")
	}
	rl, _ := reg.Lookup("repository_list")
	if !rl.CheckPlain(nil, false) || !rl.CheckPlain(json.RawMessage(`{}`), false) {
		t.Error("repository_list without arguments: not plain")
	}
}

// Plain arguments are exactly what the validator accepts unchanged: for
// every operation and arguments drawn near its schema, the full check of
// plain arguments returns them as they are, without an alias or an error.
func TestPlainArgumentsPassTheFullCheckUnchanged(t *testing.T) {
	all := ops.Registry().All()
	var list []*op.Op
	for i := range all {
		list = append(list, &all[i])
	}
	plain := 0
	rapid.Check(t, func(rt *rapid.T) {
		for range 20 {
			o := rapid.SampledFrom(list).Draw(rt, "op")
			step := rapid.Bool().Draw(rt, "step")
			args := drawArgs(rt, o)
			if !o.CheckPlain(args, step) {
				continue
			}
			plain++
			got, aliased, err := o.CheckFull(args, step)
			if err != nil || aliased || !bytes.Equal(got, normalized(args)) {
				rt.Fatalf("%s %s: plain, but the full check answers %s aliased %v, %v", o.Name, args, got, aliased, err)
			}
		}
	})
	t.Logf("%d plain draws", plain)
	if plain == 0 {
		t.Fatal("no draw was plain: the property says nothing")
	}
}

func normalized(args json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(args)) == 0 {
		return json.RawMessage("{}")
	}
	return args
}

// drawArgs draws an arguments object for o: mostly its own members with
// values of their type, sometimes another name, a null, a value of
// another type, a member twice, or odd spacing.
func drawArgs(rt *rapid.T, o *op.Op) json.RawMessage {
	var names []string
	for n := range o.InputSchema.Properties {
		names = append(names, n)
	}
	slices.Sort(names)
	names = append(names, "file_path", "x", "repoId")
	var b strings.Builder
	sp := func() {
		if rapid.IntRange(0, 9).Draw(rt, "sp") == 0 {
			b.WriteString(rapid.SampledFrom([]string{" ", "\n", "\t ", ""}).Draw(rt, "ws"))
		}
	}
	sp()
	b.WriteByte('{')
	var chosen []string
	if rapid.IntRange(0, 3).Draw(rt, "req") > 0 { // the required ones first, mostly
		chosen = slices.Clone(o.InputSchema.Required)
	}
	for range rapid.IntRange(0, 5).Draw(rt, "n") {
		chosen = append(chosen, rapid.SampledFrom(names).Draw(rt, "name"))
	}
	for i, name := range chosen {
		if i > 0 {
			b.WriteByte(',')
		}
		sp()
		b.WriteString(strconv.Quote(name))
		sp()
		b.WriteByte(':')
		sp()
		typ := ""
		if p := o.InputSchema.Properties[name]; p != nil {
			typ = p.Type
		}
		if rapid.IntRange(0, 5).Draw(rt, "odd") == 0 {
			typ = rapid.SampledFrom([]string{"null", "string", "integer", "number", "boolean", "array", "object", "big"}).Draw(rt, "typ")
		}
		switch typ {
		case "string":
			s, _ := json.Marshal(rapid.String().Draw(rt, "s"))
			b.Write(s)
		case "integer":
			b.WriteString(strconv.Itoa(rapid.IntRange(-5, 100000).Draw(rt, "i")))
		case "number":
			b.WriteString(strconv.FormatFloat(rapid.Float64Range(-1e6, 1e6).Draw(rt, "f"), 'g', -1, 64))
		case "boolean":
			b.WriteString(strconv.FormatBool(rapid.Bool().Draw(rt, "b")))
		case "array":
			b.WriteString(`["a",1]`)
		case "object":
			b.WriteString(`{"a":"b"}`)
		case "big":
			b.WriteString("123456789012345678901")
		default:
			b.WriteString("null")
		}
		sp()
	}
	b.WriteByte('}')
	sp()
	return json.RawMessage(b.String())
}
