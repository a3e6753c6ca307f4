package actors

import "strconv"

// NumLanes is the number of read lanes the lanes supervisor runs: the most
// read-only steps harnessd executes at once for one read_lanes call.
const NumLanes = 4

// LaneName returns the name of lane i ("lane-0" .. "lane-3").
func LaneName(i int) string { return "lane-" + strconv.Itoa(i) }
