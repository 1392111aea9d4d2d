// Optional: the pages work without it. A "select all" box for the inbox's bulk actions.
document.addEventListener("DOMContentLoaded", () => {
  for (const all of document.querySelectorAll("input[data-select-all]")) {
    const name = all.dataset.selectAll;
    const boxes = () => all.form.querySelectorAll(`input[type=checkbox][name="${name}"]`);
    all.addEventListener("change", () => boxes().forEach((b) => { b.checked = all.checked; }));
  }
});
