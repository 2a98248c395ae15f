package bench

// The approve workload's tiny size, beside the others' in tinyN.
func init() { tinyN["approve"] = 10 }
