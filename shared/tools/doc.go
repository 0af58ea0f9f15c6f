// Package tools is the wing of what an agent's tools are made of: the
// catalog of tool names and the flag each needs (catalog), the tool packs
// a task or a step adds (toolpacks), the team's MCP packs' adapter over
// the official MCP SDK (mcppack) and their credentials in Secrets Manager
// (secretstore). What a model may call, built from these, is the
// agenttools wing. It imports platform, models and aws.
package tools
