package main

import (
	"fmt"
	"html"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
)

func (a *app) demoAgentCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "demo-agent",
		Short: "The built-in example agent (no LLM): answers from the prompt on stdin",
		Long: `An agent for trying Switchboard without an LLM. It reads the turn prompt on
stdin and replies on stdout with who said what and how many messages it saw.
Configure it as agent.command: ["switchboard", "demo-agent"].`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			prompt, err := io.ReadAll(io.LimitReader(a.stdin, 8<<20))
			if err != nil {
				return fmt.Errorf("read prompt: %w", err)
			}
			_, err = io.WriteString(a.stdout, demoReply(string(prompt), os.Getenv)+"\n")
			return err
		},
	}
}

var (
	promptTurn    = regexp.MustCompile(`<turn [^>]*trigger="([^"]*)"`)
	promptMessage = regexp.MustCompile(`(?s)<message [^>]*name="([^"]*)"[^>]*>(.*?)</message>`)
	promptTask    = regexp.MustCompile(`(?s)<task [^>]*>(.*?)</task>`)
)

// demoReply answers a prompt the way a very polite parrot would.
func demoReply(prompt string, getenv func(string) string) string {
	msgs := promptMessage.FindAllStringSubmatch(messagesSection(prompt), -1)
	trigger := "message"
	if m := promptTurn.FindStringSubmatch(prompt); m != nil {
		trigger = m[1]
	}
	if t := promptTask.FindStringSubmatch(prompt); t != nil {
		return "Scheduled task ran: " + html.UnescapeString(t[1])
	}
	if len(msgs) == 0 {
		return fmt.Sprintf("Demo agent here (trigger %s), but I found no messages in the prompt.", trigger)
	}
	var sb strings.Builder
	last := msgs[len(msgs)-1]
	name := html.UnescapeString(last[1])
	fmt.Fprintf(&sb, "Hi %s! I am the Switchboard demo agent in folder %s. ", name, orDefault(getenv("SWITCHBOARD_FOLDER"), "?"))
	if len(msgs) == 1 {
		fmt.Fprintf(&sb, "You said: %q", firstLine(html.UnescapeString(stripTags(last[2]))))
	} else {
		fmt.Fprintf(&sb, "I saw %d messages:", len(msgs))
		for _, m := range msgs {
			fmt.Fprintf(&sb, "\n- %s: %q", html.UnescapeString(m[1]), firstLine(html.UnescapeString(stripTags(m[2]))))
		}
	}
	return sb.String()
}

// messagesSection is the <messages> block (observed context is not answered).
func messagesSection(prompt string) string {
	i := strings.Index(prompt, "<messages>")
	if i < 0 {
		return ""
	}
	return prompt[i:]
}

var tags = regexp.MustCompile(`<[^>]*>`)

func stripTags(s string) string { return tags.ReplaceAllString(s, "") }

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
