package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/harnessd/harnessd/contract/errs"
	"github.com/harnessd/harnessd/harness"
)

// opInfo is one entry of GET /v1/ops.
type opInfo struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	ReadOnly    bool            `json:"read_only"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
}

// builtinOps is this CLI's own operation table, as GET /v1/ops answers it.
func builtinOps() []opInfo {
	var out []opInfo
	for _, o := range harness.Ops() {
		schema, _ := json.Marshal(o.InputSchema)
		out = append(out, opInfo{Name: o.Name, Description: o.Description, ReadOnly: o.ReadOnly, InputSchema: schema})
	}
	return out
}

// fetchOps asks the daemon for its operations; when none answers it falls
// back to the built-in table and says so on stderr. raw is the daemon's
// answer (nil on the fallback).
func (c *cli) fetchOps(ctx context.Context) (ops []opInfo, raw json.RawMessage, err error) {
	raw, err = c.c.Get(ctx, "/v1/ops")
	if err != nil {
		if errs.From(err).Code != errs.Unavailable {
			return nil, nil, err
		}
		fmt.Fprintf(c.stderr, "harness: note: harnessd is not running on %s: showing this CLI's built-in operations\n", c.dataDir)
		return builtinOps(), nil, nil
	}
	var r struct {
		Operations []opInfo `json:"operations"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, nil, errs.New(errs.Internal, "decode /v1/ops: %v", err)
	}
	return r.Operations, raw, nil
}

func (c *cli) ops(ctx context.Context) error {
	ops, raw, err := c.fetchOps(ctx)
	if err != nil {
		return err
	}
	if c.json {
		if raw == nil {
			raw, _ = json.Marshal(map[string]any{"operations": ops})
		}
		return c.printJSON(raw)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "OPERATION\tREAD-ONLY\tDESCRIPTION")
	for _, o := range ops {
		fmt.Fprintf(tw, "%s\t%v\t%s\n", o.Name, o.ReadOnly, o.Description)
	}
	fmt.Fprintln(tw, "\nRun 'harness ops NAME' for an operation's arguments and an example.")
	return tw.Flush()
}

// opShow prints one operation: description, input schema, example call.
func (c *cli) opShow(ctx context.Context, name string) error {
	ops, _, err := c.fetchOps(ctx)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(ops))
	for _, o := range ops {
		if o.Name == name {
			return c.printOp(o)
		}
		names = append(names, o.Name)
	}
	msg := fmt.Sprintf("unknown operation %q", name)
	if m := closest(name, names); m != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", m)
	}
	return usageHint{msg, "run 'harness ops' for the list of operations"}
}

func (c *cli) printOp(o opInfo) error {
	example := exampleFor(o)
	if c.json {
		b, err := marshalNoEscape(map[string]any{"name": o.Name, "description": o.Description, "read_only": o.ReadOnly,
			"input_schema": o.InputSchema, "example": example})
		if err != nil {
			return err
		}
		return c.printJSON(b)
	}
	kind := "writes"
	if o.ReadOnly {
		kind = "read-only"
	}
	fmt.Fprintf(c.stdout, "%s (%s)\n  %s\n\nInput schema:\n", o.Name, kind, o.Description)
	var buf bytes.Buffer
	if len(o.InputSchema) == 0 || json.Indent(&buf, o.InputSchema, "", "  ") != nil {
		buf.Reset()
		buf.WriteString("{}")
	}
	fmt.Fprintf(c.stdout, "%s\n\nExample:\n  %s\n", buf.String(), example)
	return nil
}

// schemaNode is the part of a JSON schema the example needs.
type schemaNode struct {
	Type       json.RawMessage        `json:"type"`
	Properties map[string]*schemaNode `json:"properties"`
	Required   []string               `json:"required"`
	Enum       []any                  `json:"enum"`
	Items      *schemaNode            `json:"items"`
	Default    any                    `json:"default"`
	Minimum    *float64               `json:"minimum"`
}

// types is the node's "type", a string or a list of strings.
func (n *schemaNode) types() []string {
	if n == nil || len(n.Type) == 0 {
		return nil
	}
	var one string
	if json.Unmarshal(n.Type, &one) == nil {
		return []string{one}
	}
	var many []string
	_ = json.Unmarshal(n.Type, &many)
	return many
}

// exampleCall is `harness call NAME '{...}'` with a placeholder for each
// required field of the schema.
func exampleCall(name string, schema json.RawMessage) string {
	var root schemaNode
	_ = json.Unmarshal(schema, &root)
	req := append([]string(nil), root.Required...)
	sort.Strings(req)
	var b strings.Builder
	b.WriteByte('{')
	for i, f := range req {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := marshalNoEscape(f)
		v, _ := marshalNoEscape(exampleValue(f, root.Properties[f], 0))
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return "harness call " + name + " " + shellQuote(b.String())
}

// exampleFor is the example call of o: the example its description ends
// with ("Example: {...}", the arguments an agent is shown), with a
// placeholder for each required field it leaves out (repo_id: the MCP
// session's repository is implied, the CLI's never is); without one, a
// placeholder for every required field (exampleCall).
func exampleFor(o opInfo) string {
	_, ex, ok := strings.Cut(o.Description, "Example: ")
	var args map[string]json.RawMessage
	if !ok || json.Unmarshal([]byte(strings.TrimSpace(ex)), &args) != nil || args == nil {
		return exampleCall(o.Name, o.InputSchema)
	}
	var root schemaNode
	_ = json.Unmarshal(o.InputSchema, &root)
	for _, f := range root.Required {
		if _, ok := args[f]; !ok {
			v, _ := marshalNoEscape(exampleValue(f, root.Properties[f], 0))
			args[f] = v
		}
	}
	b, err := marshalNoEscape(args)
	if err != nil {
		return exampleCall(o.Name, o.InputSchema)
	}
	return "harness call " + o.Name + " " + shellQuote(string(b))
}

// exampleValue is a placeholder value of a field of schema n.
func exampleValue(field string, n *schemaNode, depth int) any {
	if n == nil {
		return "<" + field + ">"
	}
	if len(n.Enum) > 0 {
		return n.Enum[0]
	}
	if n.Default != nil {
		return n.Default
	}
	t := ""
	for _, x := range n.types() {
		if x != "null" {
			t = x
			break
		}
	}
	switch t {
	case "integer", "number":
		if n.Minimum != nil {
			return *n.Minimum
		}
		return 1
	case "boolean":
		return true
	case "array":
		if depth > 3 {
			return []any{}
		}
		return []any{exampleValue(strings.TrimSuffix(field, "s"), n.Items, depth+1)}
	case "object":
		obj := map[string]any{}
		if depth <= 3 {
			for _, f := range n.Required {
				obj[f] = exampleValue(f, n.Properties[f], depth+1)
			}
		}
		return obj
	}
	return "<" + field + ">"
}

// marshalNoEscape is json.Marshal without HTML escaping (placeholders are
// <field>, not \u003cfield\u003e).
func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
