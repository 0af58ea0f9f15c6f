package routing

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

// The hard filters before any scoring (seed 003, phase 4): a message that is
// only small talk skips scoring and any model call that would choose an
// agent; and a skill is eligible only when the message carries what it
// needs (an open editor of its types, an image).

// MaxGreetingWords is the longest message the greeting filter considers: a
// longer one always says something to route on.
const MaxGreetingWords = 6

// smallTalk is every word a greeting, thanks or small-talk message may be
// made of ("hi", "thanks a lot!", "good morning", "how are you?", "ok
// cool", "bye"). A message made only of these words, at most
// MaxGreetingWords of them, is small talk: it names no subject an agent
// could be chosen for. Apostrophes are dropped before the lookup ("what's"
// is "whats").
var smallTalk = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`hi hii hello hey heya hiya howdy yo greetings morning afternoon evening night
		good great gm gn thanks thank thx ty tysm cheers ta appreciate appreciated it you all a lot so very much many
		ok okay k kk cool nice awesome perfect excellent wonderful brilliant amazing fantastic super sweet neat
		bye goodbye cya later see ya soon take care have day weekend
		how are r u doing going is things whats sup up hows been
		yes yeah yep yup sure no nope np problem worries alright fine got understood makes sense sounds
		welcome again there team folks everyone guys friend lol haha hehe :) oh ah wow`) {
		m[w] = true
	}
	return m
}()

// IsSmallTalk reports whether text is only a greeting, thanks or small
// talk: one to MaxGreetingWords words, each of them in the documented list
// (smallTalk), punctuation and emoji aside. "Thanks! Can you explain the
// second point?" is not: "explain" and "point" say what it is about.
func IsSmallTalk(text string) bool {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		// r < or <= utf8.RuneSelf differ only at U+0080, a C1 control
		// character no message carries.
		return !(r >= 'a' && r <= 'z') && !(r >= '0' && r <= '9') && r != '\'' && r != '’' && r < utf8.RuneSelf
	})
	n := 0
	for _, w := range words {
		w = strings.NewReplacer("'", "", "’", "").Replace(w)
		if w == "" {
			continue
		}
		if !isASCII(w) {
			// Emoji and other symbols carry no subject; letters of other
			// scripts might, so they are not small talk.
			if strings.IndexFunc(w, isLetterOrDigit) >= 0 {
				return false
			}
			continue
		}
		if !smallTalk[w] {
			return false
		}
		n++
	}
	return n >= 1 && n <= MaxGreetingWords
}

func isLetterOrDigit(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// MessageContext is what a message carries besides its text, for
// eligibility only: the editor the user has open and references to what is
// attached. Nothing here is read by a model; it decides which skills may
// answer.
type MessageContext struct {
	Editor      *Editor      `json:"editor,omitempty"`
	Attachments []Attachment `json:"attachments,omitempty"`
}

// Editor is the document the user has open.
type Editor struct {
	Type string `json:"type"`
}

// Attachment is a reference to something attached to a message (its
// content is not sent: it decides eligibility, e.g. requires_image_context).
type Attachment struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Name      string `json:"name,omitempty"`
}

// Attachment types.
const (
	AttachmentImage    = "image"
	AttachmentFile     = "file"
	AttachmentDocument = "document"
)

// Bounds of a message's context.
const (
	MaxAttachments = 10
	maxContextText = 200
)

// Validate checks a message's context; errors name the field.
func (c *MessageContext) Validate() error {
	if c == nil {
		return nil
	}
	if c.Editor != nil {
		if t := c.Editor.Type; strings.TrimSpace(t) == "" || len(t) > 64 {
			return apperr.Invalid("context.editor.type", "context.editor.type must be 1 to 64 characters")
		}
	}
	if len(c.Attachments) > MaxAttachments {
		return apperr.Invalid("context.attachments", "at most %d attachments", MaxAttachments)
	}
	for _, a := range c.Attachments {
		switch a.Type {
		case AttachmentImage, AttachmentFile, AttachmentDocument:
		default:
			return apperr.Invalid("context.attachments.type", "an attachment's type must be image, file or document")
		}
		if len(a.MediaType) > maxContextText || len(a.Name) > maxContextText {
			return apperr.Invalid("context.attachments", "an attachment's media_type and name are at most %d characters", maxContextText)
		}
		if a.MediaType != "" && !strings.Contains(a.MediaType, "/") {
			return apperr.Invalid("context.attachments.media_type", "media_type must look like type/subtype")
		}
	}
	return nil
}

// HasImage reports whether an image is attached (by type, or by an image/*
// media type).
func (c *MessageContext) HasImage() bool {
	if c == nil {
		return false
	}
	for _, a := range c.Attachments {
		if a.Type == AttachmentImage || strings.HasPrefix(strings.ToLower(a.MediaType), "image/") {
			return true
		}
	}
	return false
}

// EditorType is the open editor's type, "" when none.
func (c *MessageContext) EditorType() string {
	if c == nil || c.Editor == nil {
		return ""
	}
	return c.Editor.Type
}

// Eligible reports whether a skill may answer a user's message with this
// context (seed 003's hard filters): never an internal_only skill; a skill
// that requires an editor only with one open; a skill with editor_types
// not when an editor of another type is open; a skill that requires an
// image only with one attached.
func Eligible(s agents.Skill, c *MessageContext) bool {
	if s.InternalOnly {
		return false
	}
	editor := c.EditorType()
	if s.RequiresEditor && editor == "" {
		return false
	}
	if editor != "" && len(s.EditorTypes) > 0 && !containsFold(s.EditorTypes, editor) {
		return false
	}
	if s.RequiresImageContext && !c.HasImage() {
		return false
	}
	return true
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}
