module switchboard

go 1.26.8

require (
	github.com/bwmarrin/discordgo v0.29.0
	github.com/go-telegram/bot v1.19.0
	github.com/gorilla/websocket v1.5.3
	github.com/mark3labs/mcp-go v1.2.1
	github.com/mattn/go-sqlite3 v1.14.52
	github.com/robfig/cron/v3 v3.0.1
	github.com/slack-go/slack v0.35.0
	github.com/spf13/cobra v1.10.2
	github.com/yuin/goldmark v1.8.7
	gopkg.in/yaml.v3 v3.0.1
)

require (
	github.com/google/jsonschema-go v0.4.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.2 // indirect
	github.com/spf13/cast v1.7.1 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	github.com/yosida95/uritemplate/v3 v3.0.2 // indirect
	golang.org/x/crypto v0.0.0-20210421170649-83a5a9bb288b // indirect
	golang.org/x/sys v0.5.0 // indirect
	golang.org/x/text v0.14.0 // indirect
)
