package search

// PathCompare orders slash-separated relative paths the way search
// results are ordered: component by component in byte order ("a/b" before
// "a.b"). Callers that hand SearchListed a file list sort it with this.
func PathCompare(a, b string) int { return pathCompare(a, b) }
