package mcp_test

import "fmt"

func fmtSscanf(s string, pid *int) (int, error) { return fmt.Sscanf(s, "pid=%d", pid) }
