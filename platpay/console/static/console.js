// The console's only script: a confirmation before a form marked data-confirm is sent. Every page works
// without it (the server checks everything again).
document.addEventListener("submit", (event) => {
  const form = event.target;
  if (form instanceof HTMLFormElement && form.dataset.confirm && !window.confirm(form.dataset.confirm)) {
    event.preventDefault();
  }
});
