package op

import (
	"fmt"
	"sort"
)

// Registry is the static table of operations: built once from a literal
// list, never changed, and loud on a duplicate name.
type Registry struct {
	list  []Op
	index map[string]*Op
}

// NewRegistry returns the registry of the given groups of operations,
// sorted by name. A name defined twice panics: two operations must never
// silently shadow each other. A composite operation's step kinds get their
// schema enum from the descriptors here (see Descriptor.Composite).
func NewRegistry(groups ...[]Op) *Registry {
	r := &Registry{index: map[string]*Op{}}
	for _, g := range groups {
		r.list = append(r.list, g...)
	}
	sort.Slice(r.list, func(i, j int) bool { return r.list[i].Name < r.list[j].Name })
	for i := range r.list {
		o := &r.list[i]
		if o.Name == "" {
			panic("op: an operation has no name")
		}
		if _, dup := r.index[o.Name]; dup {
			panic(fmt.Sprintf("op: operation %q is defined twice", o.Name))
		}
		r.index[o.Name] = o
	}
	r.composites()
	return r
}

// Lookup returns the named operation.
func (r *Registry) Lookup(name string) (*Op, bool) {
	o, ok := r.index[name]
	return o, ok
}

// All returns every operation, sorted by name. The slice is shared: do not
// change it.
func (r *Registry) All() []Op { return r.list }
