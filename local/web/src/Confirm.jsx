// A confirmation asked in a modal dialog (the <dialog> element, which
// keeps the focus inside and closes on Escape): the page's only way to
// delete something.

import { useEffect, useId, useRef } from 'react';

/**
 * Asks question; onAnswer(true) on confirm, (false) on cancel or Escape.
 * Open while mounted.
 */
export function Confirm({ title, text, confirmLabel, onAnswer, testid = 'confirm' }) {
  const ref = useRef(null);
  const titleId = useId();
  const textId = useId();
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog.open) dialog.showModal();
    return () => dialog.open && dialog.close();
  }, []);
  return (
    <dialog ref={ref} className="confirm" data-testid={testid} aria-labelledby={titleId} aria-describedby={textId}
      onCancel={(e) => {
        e.preventDefault();
        onAnswer(false);
      }}>
      <h2 id={titleId}>{title}</h2>
      <p id={textId}>{text}</p>
      <div className="confirm-actions">
        <button type="button" data-testid={`${testid}-cancel`} autoFocus onClick={() => onAnswer(false)}>Cancel</button>
        <button type="button" className="danger" data-testid={`${testid}-ok`} onClick={() => onAnswer(true)}>{confirmLabel}</button>
      </div>
    </dialog>
  );
}
