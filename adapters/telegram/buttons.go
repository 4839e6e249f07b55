package telegram

import (
	"context"
	"strconv"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"switchboard/adapters"
)

var _ adapters.Buttons = (*Adapter)(nil)

// maxAnswer is Telegram's limit on a callback answer's text, in characters.
const maxAnswer = 200

// keyboard is an inline keyboard of callback buttons in one row. It is
// encoded by hand because the SDK's InlineKeyboardButton always sends an
// empty copy_text, which Telegram refuses (BUTTON_COPY_TEXT_INVALID).
// No buttons encodes an empty keyboard: the way to remove one.
type keyboard struct {
	Rows [][]keyButton `json:"inline_keyboard"`
}

type keyButton struct {
	Text         string `json:"text"`
	CallbackData string `json:"callback_data"`
	Style        string `json:"style,omitempty"` // Bot API 9.4: primary, danger, success
}

func newKeyboard(buttons []adapters.Button) (keyboard, error) {
	row := make([]keyButton, 0, len(buttons))
	for _, b := range buttons {
		if err := b.Validate(); err != nil {
			return keyboard{}, err
		}
		row = append(row, keyButton{Text: b.Label, CallbackData: b.Data, Style: string(b.Style)})
	}
	if len(row) == 0 {
		return keyboard{Rows: [][]keyButton{}}, nil
	}
	return keyboard{Rows: [][]keyButton{row}}, nil
}

// SendButtons sends m with an inline keyboard of buttons under it.
func (a *Adapter) SendButtons(ctx context.Context, m adapters.Outbound, buttons []adapters.Button) (adapters.MessageID, error) {
	kb, err := newKeyboard(buttons)
	if err != nil {
		return "", err
	}
	return a.send(ctx, m, kb)
}

// EditButtons replaces the text and the keyboard of a message; nil buttons
// removes the keyboard.
func (a *Adapter) EditButtons(ctx context.Context, ref adapters.MessageRef, text string, buttons []adapters.Button) error {
	kb, err := newKeyboard(buttons)
	if err != nil {
		return err
	}
	return a.edit(ctx, ref, text, kb)
}

// callback hands a button press to the gateway and answers the callback
// query with the gateway's answer (so the client stops spinning), also
// when the gateway failed or the press carries no data.
func (a *Adapter) callback(ctx context.Context, host adapters.Host, q *models.CallbackQuery) {
	p := adapters.Press{Sender: userJID(q.From.ID), SenderName: userName(&q.From), Data: q.Data}
	switch m := q.Message; {
	case m.Message != nil:
		p.Chat, p.Message = a.chatJID(m.Message.Chat), a.msgID(m.Message.Chat.ID, m.Message.ID)
		if m.Message.Chat.IsForum && m.Message.IsTopicMessage && m.Message.MessageThreadID != 0 {
			p.Topic = strconv.Itoa(m.Message.MessageThreadID)
		}
	case m.InaccessibleMessage != nil:
		p.Chat, p.Message = a.chatJID(m.InaccessibleMessage.Chat), a.msgID(m.InaccessibleMessage.Chat.ID, m.InaccessibleMessage.MessageID)
	}
	answer, err := adapters.PressAnswer(ctx, host, p)
	if err != nil {
		a.log.Warn("telegram button press not taken; the presser was asked to try again", "jid", p.Chat, "sender", p.Sender, "err", err)
	}
	answer = adapters.Shorten(answer, maxAnswer)
	b, err := a.client()
	if err == nil {
		_, err = b.AnswerCallbackQuery(ctx, &bot.AnswerCallbackQueryParams{CallbackQueryID: q.ID, Text: answer})
	}
	if err != nil && ctx.Err() == nil {
		a.log.Warn("answer telegram callback query", "jid", p.Chat, "err", classify(p.Chat, err))
	}
}
