// A person's rating of an assistant message (docs/http-api.md, "Ratings"):
// a thumbs up and a thumbs down under the message, pressed to rate it and
// pressed again to take the rating back. The rating shown first is the one
// GET /Chat/{chatId} gave in the message's metadata.

import { useState } from 'react';
import { ThumbDownIcon, ThumbUpIcon } from './icons.jsx';

const RATINGS = [['up', <ThumbUpIcon />, 'Good answer'], ['down', <ThumbDownIcon />, 'Bad answer']];

/** The two rating buttons of message; onRate(messageId, rating or '') stores the choice. */
export function Rating({ message, onRate }) {
  const [rating, setRating] = useState(message.metadata?.feedback?.rating ?? '');
  const [saving, setSaving] = useState(false);
  const [problem, setProblem] = useState('');
  const press = async (r) => {
    const next = rating === r ? '' : r;
    setSaving(true);
    setProblem('');
    try {
      await onRate(message.id, next);
      setRating(next);
    } catch (err) {
      setProblem(`Not saved: ${err.message}`);
    } finally {
      setSaving(false);
    }
  };
  return (
    <span className="rating" data-testid="rating" data-rating={rating} role="group" aria-label="Rate this answer">
      {RATINGS.map(([r, icon, label]) => (
        <button key={r} type="button" className="icon" data-testid={`rate-${r}`} aria-pressed={rating === r} aria-label={label} title={label}
          disabled={saving} onClick={() => press(r)}>{icon}</button>
      ))}
      {problem && <span className="rating-problem" role="alert" data-testid="rating-problem">{problem}</span>}
    </span>
  );
}
