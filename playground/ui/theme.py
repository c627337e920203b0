"""The page's Gradio theme: the default one, its text colours brought to WCAG AA's 4.5:1. On white, the
default's orange and greys were under it where the page says most: Run (white on orange-500, 2.8:1), the
chosen tab's name (orange-500, 2.8:1), Stop (white on red-500, 3.8:1), the sliders' ends and the footer
(neutral-400, 1.9:1). Dark mode's own values pass and are kept."""
import gradio as gr


def theme() -> gr.themes.Base:
    look = gr.themes.Default().set(
        button_primary_background_fill="*primary_700",  # white on it: 5.2:1
        button_primary_background_fill_hover="*primary_800",  # 7.3:1
        button_primary_border_color="*primary_700",
        button_primary_background_fill_dark="*primary_700",  # (white on orange-600: 3.6:1)
        button_primary_background_fill_hover_dark="*primary_800",
        button_cancel_background_fill="#b91c1c",  # red-700: 6.5:1
        button_cancel_background_fill_hover="#991b1b",  # red-800: 8.3:1
        color_accent="*primary_700",  # a chosen tab's name, sliders, focus rings: 5.2:1 on white
        body_text_color_subdued="*neutral_500",  # 4.8:1 on white, as the labels
    )
    look.color_accent_dark = "*primary_500"  # 6.5:1 on dark mode's background (set() has no dark accent;
    # Gradio writes every attribute ending in _dark into its dark rules)
    return look
