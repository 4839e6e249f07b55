package main

// env is a getenv that reads vars (nil: an empty environment).
func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}
