// What a person typed into a question's or an approval's form, kept by
// the call's id outside the form: the form is drawn again from scratch
// whenever its message is (a reloaded tab shows the question from GET
// /Chat, then again from the resumed stream), and a ticked box or a typed
// value must not go back to its default under the person's cursor.

import { useCallback, useState } from 'react';

const drafts = new Map(); // by call id and form

/**
 * useState for a form's values, kept under key across remounts until
 * forgotten; init gives the first value.
 */
export function useDraft(key, init) {
  const [value, setValue] = useState(() => (drafts.has(key) ? drafts.get(key) : init()));
  const set = useCallback((v) => {
    drafts.set(key, v);
    setValue(v);
  }, [key]);
  return [value, set];
}

/** Forgets the drafts under key: the form was answered. */
export function forgetDraft(key) {
  drafts.delete(key);
}
