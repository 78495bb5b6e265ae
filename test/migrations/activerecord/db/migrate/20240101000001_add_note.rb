class AddNote < ActiveRecord::Migration[6.1]
  def change
    %i[ar_row ar_tab ar_res].each do |t|
      add_column t, :note, :string
      add_column t, :flag, :integer, default: 1
    end
  end
end
