package toolpacks

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// MCPToolSeparator joins a pack's name and its tool's in the name a model
// calls.
const MCPToolSeparator = "__"

// ModelToolName is what a model calls tool of pack: "{pack}__{tool}" when
// that fits Bedrock's tool names (ModelNamePattern); otherwise the tool's
// name is cut to what fits, its other characters replaced by "_", and
// ended by 8 hex digits of its SHA-256, so two long names never collide
// and the same tool is always named the same.
func ModelToolName(pack, tool string) string {
	plain := pack + MCPToolSeparator + tool
	if modelName.MatchString(plain) {
		return plain
	}
	sum := sha256.Sum256([]byte(tool))
	tag := hex.EncodeToString(sum[:4])
	var b strings.Builder
	for _, r := range tool {
		if r < 128 && (r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	room := ModelNameMax - len(pack) - len(MCPToolSeparator) - len(tag) - 1
	safe := b.String()
	if len(safe) > room {
		safe = safe[:room]
	}
	return pack + MCPToolSeparator + safe + "_" + tag
}

// SplitModelName returns the pack of an MCP tool's model name.
func SplitModelName(name string) (pack string, ok bool) {
	pack, _, ok = strings.Cut(name, MCPToolSeparator)
	return pack, ok && mcpPackName.MatchString(pack)
}
