package routing_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

// Small talk is one to MaxGreetingWords words of the list, whatever the
// punctuation, apostrophes and emoji around them; any other word, digit
// or letter of another script names a subject.
func TestSmallTalkIsOneToSixWordsOfTheList(t *testing.T) {
	for text, want := range map[string]bool{
		"hi":                                true,
		"Thanks a lot, see you soon!":       true, // six words
		"Thanks a lot, see you soon, team!": false,
		"what's up?":                        true,
		"what’s up?":                        true,
		"thanks 👍":                          true,
		"👍":                                 false, // no word at all
		"":                                  false,
		"hi z":                              false,
		"hi 0":                              false,
		"hi 9":                              false,
		"hi café":                           false,
		"Thanks! Can you explain the second point?": false,
	} {
		assert.Equal(t, want, routing.IsSmallTalk(text), "%q", text)
	}
	assert.Equal(t, 6, routing.MaxGreetingWords)
}

// A message's context is checked at its bounds, and each error names the
// field.
func TestMessageContextBounds(t *testing.T) {
	var none *routing.MessageContext
	require.NoError(t, none.Validate())
	image := routing.Attachment{Type: routing.AttachmentImage, MediaType: "image/png", Name: "shot.png"}
	valid := []routing.MessageContext{
		{},
		{Editor: &routing.Editor{Type: strings.Repeat("e", 64)}},
		{Attachments: make([]routing.Attachment, routing.MaxAttachments)},
		{Attachments: []routing.Attachment{{Type: routing.AttachmentFile, MediaType: "text/" + strings.Repeat("p", 195), Name: strings.Repeat("n", 200)}}},
		{Attachments: []routing.Attachment{{Type: routing.AttachmentDocument}, image}},
	}
	for i := range valid[2].Attachments {
		valid[2].Attachments[i] = image
	}
	for _, c := range valid {
		assert.NoError(t, c.Validate(), "%+v", c)
	}
	for field, c := range map[string]routing.MessageContext{
		"context.editor.type":            {Editor: &routing.Editor{Type: "  "}},
		"context.attachments":            {Attachments: append(slicesOf(image, routing.MaxAttachments), image)},
		"context.attachments.type":       {Attachments: []routing.Attachment{image, {Type: "video"}}},
		"context.attachments.media_type": {Attachments: []routing.Attachment{{Type: routing.AttachmentImage, MediaType: "png"}}},
	} {
		ae, ok := apperr.As(c.Validate())
		require.True(t, ok, field)
		assert.Equal(t, apperr.EINVALID, ae.Code, field)
		assert.Equal(t, field, ae.Field)
	}
	for _, c := range []routing.MessageContext{
		{Editor: &routing.Editor{Type: strings.Repeat("e", 65)}},
		{Attachments: []routing.Attachment{{Type: routing.AttachmentFile, MediaType: "text/" + strings.Repeat("p", 196)}}},
		{Attachments: []routing.Attachment{{Type: routing.AttachmentFile, Name: strings.Repeat("n", 201)}}},
	} {
		assert.True(t, apperr.Is(c.Validate(), apperr.EINVALID), "%+v", c)
	}
}

func slicesOf(a routing.Attachment, n int) []routing.Attachment {
	out := make([]routing.Attachment, n)
	for i := range out {
		out[i] = a
	}
	return out
}

// The hard filters: an image by its type or its media type, an editor's
// type, and which skills may answer with them.
func TestEligibilityByEditorAndImage(t *testing.T) {
	var none *routing.MessageContext
	assert.False(t, none.HasImage())
	assert.Equal(t, "", none.EditorType())
	assert.Equal(t, "", (&routing.MessageContext{}).EditorType(), "no editor open")
	assert.True(t, (&routing.MessageContext{Attachments: []routing.Attachment{{Type: routing.AttachmentImage}}}).HasImage())
	assert.True(t, (&routing.MessageContext{Attachments: []routing.Attachment{{Type: routing.AttachmentFile, MediaType: "Image/PNG"}}}).HasImage())
	assert.False(t, (&routing.MessageContext{Attachments: []routing.Attachment{{Type: routing.AttachmentFile, MediaType: "text/plain"}}}).HasImage())

	sheet := &routing.MessageContext{Editor: &routing.Editor{Type: "Spreadsheet"}}
	picture := &routing.MessageContext{Attachments: []routing.Attachment{{Type: routing.AttachmentImage}}}
	for _, c := range []struct {
		name  string
		skill agents.Skill
		ctx   *routing.MessageContext
		want  bool
	}{
		{"plain, no context", agents.Skill{}, nil, true},
		{"plain, an editor open", agents.Skill{}, sheet, true},
		{"internal only", agents.Skill{InternalOnly: true}, nil, false},
		{"needs an editor, none", agents.Skill{RequiresEditor: true}, &routing.MessageContext{}, false},
		{"needs an editor, one open", agents.Skill{RequiresEditor: true}, sheet, true},
		{"its editor type, any case", agents.Skill{EditorTypes: []string{"spreadsheet"}}, sheet, true},
		{"another editor type", agents.Skill{EditorTypes: []string{"code"}}, sheet, false},
		{"editor types, none open", agents.Skill{EditorTypes: []string{"code"}}, picture, true},
		{"needs an image, none", agents.Skill{RequiresImageContext: true}, sheet, false},
		{"needs an image, attached", agents.Skill{RequiresImageContext: true}, picture, true},
	} {
		assert.Equal(t, c.want, routing.Eligible(c.skill, c.ctx), c.name)
	}
}

// The index applies the same filters to every message it scores: a skill for
// one editor type matches with no editor or that one open, not with
// another; a skill without editor types with any; a skill that needs an
// editor or an image only with it.
func TestTheIndexScoresOnlyEligibleSkills(t *testing.T) {
	ix := routing.BuildIndex([]agents.Agent{
		{Slug: "sheets", Skills: []agents.Skill{{Name: "formulas", Description: "Write spreadsheet formulas", EditorTypes: []string{"spreadsheet"}}}},
		{Slug: "coder", Skills: []agents.Skill{{Name: "code-review", Description: "Review code for bugs"}}},
		{Slug: "writer", Skills: []agents.Skill{{Name: "proofreading", Description: "Proofread the open document", RequiresEditor: true}}},
		{Slug: "painter", Skills: []agents.Skill{{Name: "picture-captions", Description: "Caption a picture", RequiresImageContext: true}}},
	})
	sheet := &routing.MessageContext{Editor: &routing.Editor{Type: "spreadsheet"}}
	code := &routing.MessageContext{Editor: &routing.Editor{Type: "code"}}
	picture := &routing.MessageContext{Attachments: []routing.Attachment{{Type: routing.AttachmentImage}}}
	matches := func(q, slug string, c *routing.MessageContext) bool {
		return scoreOf(t, ix.Score(q, routing.Signals{Context: c}), slug).SkillMatch > 0
	}
	assert.True(t, matches("spreadsheet formulas", "sheets", nil), "no editor open")
	assert.True(t, matches("spreadsheet formulas", "sheets", sheet), "its editor open")
	assert.False(t, matches("spreadsheet formulas", "sheets", code), "another editor open")
	assert.True(t, matches("review code", "coder", code), "no editor types: any editor")
	assert.True(t, matches("review code", "coder", sheet), "no editor types: any editor")
	assert.False(t, matches("proofread the document", "writer", nil), "needs an editor")
	assert.True(t, matches("proofread the document", "writer", code))
	assert.False(t, matches("caption the picture", "painter", sheet), "needs an image")
	assert.True(t, matches("caption the picture", "painter", picture))
}
