package messages

import "time"

// Repository is one registered work tree.
type Repository struct {
	ID         string    `json:"repo_id"`
	CheckoutID string    `json:"checkout_id"`
	Root       string    `json:"root"`
	CommonDir  string    `json:"git_common_dir"`
	Registered time.Time `json:"registered_at"`
}

// Register asks the registry to record a work tree. Root and CommonDir are
// canonical (realpath) and already checked to be a git work tree; the
// registry does no I/O but its own persistence.
type Register struct {
	Root      string
	CommonDir string
	Now       time.Time
}

// Registered answers Register. Created is false when the work tree was
// already registered (registration is idempotent).
type Registered struct {
	Repo    Repository
	Created bool
}

// Unregister asks the registry to forget a repository.
type Unregister struct{ RepoID string }

// Unregistered answers Unregister.
type Unregistered struct{ Repo Repository }

// ListRepos asks for every registered repository.
type ListRepos struct{}

// Repos answers ListRepos, sorted by root.
type Repos struct{ Repos []Repository }
