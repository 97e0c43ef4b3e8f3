// Regenerate and edit (docs/conversation-control.md): a Regenerate button
// under the last assistant message and an Edit control under each user
// message. Both go through useChat: regenerate({messageId}) and
// sendMessage({text, messageId}), which cut the page's own list and POST
// the request; the server takes back the turn and what followed it. Other
// tabs see the change when the new turn starts (live.js loads the
// conversation again).

import { useState } from 'react';
import { Rating } from './Feedback.jsx';

/**
 * The controls under one message; none to press while a turn runs (busy:
 * here, in the background, or in a live conversation), and why, when the
 * page says so (waiting). An assistant message also gets its rating
 * buttons (Feedback.jsx) once its turn is over.
 */
export function MessageActions({ message, last, busy, waiting, onRegenerate, onEdit, onRate }) {
  const [editing, setEditing] = useState(null); // the text being edited, or null
  if (message.role === 'user') {
    const text = message.parts.filter((p) => p.type === 'text').map((p) => p.text).join('');
    if (editing !== null) {
      const save = (e) => {
        e.preventDefault();
        const next = editing.trim();
        if (!next) return;
        setEditing(null);
        onEdit(message.id, next);
      };
      return (
        <form className="msg-actions" data-testid="message-actions" data-role="user" onSubmit={save}>
          <label htmlFor={`edit-${message.id}`} className="visually-hidden">Edit your message</label>
          <input id={`edit-${message.id}`} data-testid="edit-input" value={editing} autoFocus
            onChange={(e) => setEditing(e.target.value)} />
          <button type="submit" data-testid="edit-save" disabled={busy} title={waiting}>Send</button>
          <button type="button" className="link" data-testid="edit-cancel" onClick={() => setEditing(null)}>Cancel</button>
        </form>
      );
    }
    return (
      <div className="msg-actions" data-testid="message-actions" data-role="user">
        <button type="button" className="link" data-testid="edit" disabled={busy} title={waiting || 'Edit this message: what followed it is replaced'}
          onClick={() => setEditing(text)}>Edit</button>
      </div>
    );
  }
  if (message.role !== 'assistant' || message.id.startsWith('switch-')) return null;
  const writing = busy && last;
  if (!last && !onRate) return null;
  return (
    <div className="msg-actions" data-testid="message-actions" data-role="assistant">
      {last && <button type="button" className="link" data-testid="regenerate" disabled={busy} title={waiting || 'Answer the last message again'}
        onClick={() => onRegenerate(message.id)}>Regenerate</button>}
      {!writing && onRate && <Rating message={message} onRate={onRate} />}
    </div>
  );
}
