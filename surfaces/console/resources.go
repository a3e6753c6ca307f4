package console

import (
	"strconv"
)

// cpuText shows a CPU time in milliseconds as seconds: "1.52 s".
func cpuText(ms int64) string {
	return strconv.FormatFloat(float64(ms)/1000, 'f', 2, 64) + " s"
}

// bytesText shows a byte count in binary units: "512 B", "64.0 MiB".
func bytesText(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return strconv.FormatFloat(float64(n)/float64(div), 'f', 1, 64) + " " + string("KMGTP"[exp]) + "iB"
}
