package persistence_test

import (
	"fmt"

	"github.com/harnessd/harnessd/persistence"
)

func Example() {
	s, err := persistence.Open(persistence.Options{InMemory: true})
	if err != nil {
		panic(err)
	}
	defer s.Close()

	type repo struct {
		Root string `json:"root"`
	}
	_ = s.PutSync(persistence.RepoKey("repo_1"), repo{Root: "/src/app"})

	var r repo
	_ = s.Get(persistence.RepoKey("repo_1"), &r)
	fmt.Println(r.Root)

	err = s.Get(persistence.RepoKey("missing"), &r)
	fmt.Println(err == persistence.ErrNotFound)
	// Output:
	// /src/app
	// true
}
