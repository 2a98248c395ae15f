package httpapi

import (
	"fmt"
	"strconv"

	"github.com/heddlewf/heddle/engine"
)

// msParam parses an optional time parameter in Unix milliseconds (the
// list's created_from_ms and created_before_ms); absent is 0, no bound.
func (c *call) msParam(name string) (int64, error) {
	s := c.r.URL.Query().Get(name)
	if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%w: query parameter %s=%q is not a time in Unix milliseconds", engine.ErrInvalidCommand, name, s)
	}
	return v, nil
}
